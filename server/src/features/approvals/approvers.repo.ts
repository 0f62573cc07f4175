import { type Kysely, sql } from 'kysely';
import type { ArgumentRule, DB, RuleApprovers } from '../../db/schema.ts';
import type { WhoDecides } from '../users/approvers-check.ts';
import { approversQuery } from '../users/org-approvers.repo.ts';

/** What an action's rule says of deciding its calls: who may, how many must approve, which arguments are refused. */
export interface DecisionRule extends WhoDecides {
  argumentRules: ArgumentRule[];
}

/**
 * Each action's rule of who decides, read while its calls wait: its action rule's (a webhook's action) or
 * its inbox's assignment of its agent (an email's). With neither (no rule, or the assignment taken off
 * the inbox), the org's admins decide, one approval each. Joined as a table (`d`, by `actionId`).
 */
export const decisionRules = (db: Kysely<DB>) =>
  db
    .selectFrom('actions as da')
    .leftJoin('actionRules as dr', 'dr.id', 'da.actionRuleId')
    .leftJoin('emailMessages as dm', 'dm.id', 'da.emailMessageId')
    .leftJoin('emailInboxAgents as di', (join) =>
      join.onRef('di.inboxId', '=', 'dm.inboxId').onRef('di.agentId', '=', 'da.agentId'),
    )
    .select([
      'da.id as actionId',
      sql<RuleApprovers | null>`coalesce(dr.approvers, di.approvers)`.as('approvers'),
      sql<number>`coalesce(dr.min_approvals, di.min_approvals, 1)`.as('minApprovals'),
      sql<ArgumentRule[]>`coalesce(dr.argument_rules, '[]'::jsonb)`.as('argumentRules'),
    ]);

/** The action's decision rule (decisionRules). */
export async function decisionRuleOf(db: Kysely<DB>, orgId: string, actionId: string): Promise<DecisionRule | undefined> {
  return decisionRules(db)
    .where('da.id', '=', actionId)
    .where('da.orgId', '=', orgId)
    .executeTakeFirst()
    .then((row) => row && { approvers: row.approvers, minApprovals: row.minApprovals, argumentRules: row.argumentRules });
}

/** The one rule of who decides, for every channel: a member the rule names (by default, an admin of the org). */
export async function isApprover(db: Kysely<DB>, orgId: string, rule: DecisionRule, userId: string): Promise<boolean> {
  return (await approversQuery(db, orgId, rule.approvers).where('u.id', '=', userId).executeTakeFirst()) !== undefined;
}
