import type { Kysely } from 'kysely';
import type { ArgumentRule, DB, RuleApprovers } from '../../db/schema.ts';
import { approversQuery } from '../users/org-approvers.repo.ts';

/** What an action's rule says of deciding its calls: who may, how many must approve, which arguments are refused. */
export interface DecisionRule {
  approvers: RuleApprovers | null;
  minApprovals: number;
  argumentRules: ArgumentRule[];
}

/** The action's decision rule; an action without a rule (an email's) is decided by one of the org's admins. */
export async function decisionRuleOf(db: Kysely<DB>, orgId: string, actionId: string): Promise<DecisionRule | undefined> {
  const row = await db
    .selectFrom('actions as a')
    .leftJoin('actionRules as r', 'r.id', 'a.actionRuleId')
    .select(['r.approvers', 'r.minApprovals', 'r.argumentRules'])
    .where('a.id', '=', actionId)
    .where('a.orgId', '=', orgId)
    .executeTakeFirst();
  if (!row) return undefined;
  return { approvers: row.approvers ?? null, minApprovals: row.minApprovals ?? 1, argumentRules: row.argumentRules ?? [] };
}

/** The one rule of who decides, for every channel: a member the rule names (by default, an admin of the org). */
export async function isApprover(db: Kysely<DB>, orgId: string, rule: DecisionRule, userId: string): Promise<boolean> {
  return (await approversQuery(db, orgId, rule.approvers).where('u.id', '=', userId).executeTakeFirst()) !== undefined;
}
