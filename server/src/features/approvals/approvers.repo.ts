import { type Kysely, sql } from 'kysely';
import type { ActionSource, ArgumentRule, DB, RuleApprovers } from '../../db/schema.ts';
import type { WhoDecides } from '../users/approvers-check.ts';
import { approversQuery } from '../users/org-approvers.repo.ts';

/** What an action's rule says of deciding its calls: who may, how many must approve, which arguments are refused. */
export interface DecisionRule extends WhoDecides {
  argumentRules: ArgumentRule[];
  /** What made the action: whose argument rules they are (a webhook's action rule, an email's inbox assignment). */
  source: ActionSource;
}

/**
 * Each action's rule of who decides, read while its calls wait: its action rule's (a webhook's action) or
 * its inbox's assignment of its agent (an email's). With neither (no rule, or the assignment taken off
 * the inbox), the org's admins decide, one approval each. Joined as a table (`d`, by `actionId`).
 * An email's argument rules are the ones its action was created with (the runner reads the same).
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
      // An email's action keeps the argument rules it was created with, as its runs read them.
      sql<ArgumentRule[]>`coalesce(dr.argument_rules, da.argument_rules, '[]'::jsonb)`.as('argumentRules'),
      'da.source',
    ]);

/** The action's decision rule (decisionRules). */
export async function decisionRuleOf(db: Kysely<DB>, orgId: string, actionId: string): Promise<DecisionRule | undefined> {
  return decisionRules(db)
    .where('da.id', '=', actionId)
    .where('da.orgId', '=', orgId)
    .executeTakeFirst()
    .then(
      (row) =>
        row && { approvers: row.approvers, minApprovals: row.minApprovals, argumentRules: row.argumentRules, source: row.source },
    );
}

/** The one rule of who decides, for every channel: a member the rule names (by default, an admin of the org). */
export async function isApprover(db: Kysely<DB>, orgId: string, rule: DecisionRule, userId: string): Promise<boolean> {
  return (await approversQuery(db, orgId, rule.approvers).where('u.id', '=', userId).executeTakeFirst()) !== undefined;
}

/** An inbox's action: the email it answers (its sender and subject), for an approver to know which; null for a webhook's. */
export const answeredEmail = (row: { emailFrom: string | null; emailSubject: string | null }) =>
  row.emailFrom === null ? null : { from: row.emailFrom, subject: row.emailSubject ?? '' };
