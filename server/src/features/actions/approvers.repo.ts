import type { Kysely } from 'kysely';
import type { ArgumentRule, DB, RuleApprovers } from '../../db/schema.ts';

/** Of the org's members, those a rule's `approvers` names (null: its admins): who may decide its calls. */
export const approversQuery = (db: Kysely<DB>, orgId: string, approvers: RuleApprovers | null) => {
  const userIds = approvers?.userIds ?? [];
  const byRole = approvers === null || approvers.role === 'Admin';
  return db
    .selectFrom('users as u')
    .innerJoin('memberships as m', 'm.userId', 'u.id')
    .select(['u.id', 'u.email', 'u.firstName', 'u.lastName', 'u.username', 'u.approvalEmails'])
    .where('m.orgId', '=', orgId)
    .where((eb) =>
      eb.or([...(byRole ? [eb('u.role', '=', 'Admin')] : []), ...(userIds.length > 0 ? [eb('u.id', 'in', userIds)] : [])]),
    );
};

/** The one rule of who decides, for every channel: a member the action's rule names (by default, an admin of the org). */
export async function mayDecide(db: Kysely<DB>, orgId: string, actionId: string, userId: string): Promise<boolean> {
  const rule = await db
    .selectFrom('actions as a')
    .leftJoin('actionRules as r', 'r.id', 'a.actionRuleId')
    .select(['r.approvers'])
    .where('a.id', '=', actionId)
    .where('a.orgId', '=', orgId)
    .executeTakeFirst();
  if (!rule) return false;
  return (
    (await approversQuery(db, orgId, rule.approvers ?? null)
      .where('u.id', '=', userId)
      .executeTakeFirst()) !== undefined
  );
}

/** The argument rules of the action's rule (none for an action without one: an email's). */
export async function argumentRulesOf(db: Kysely<DB>, actionId: string): Promise<ArgumentRule[]> {
  const row = await db
    .selectFrom('actions as a')
    .leftJoin('actionRules as r', 'r.id', 'a.actionRuleId')
    .select('r.argumentRules')
    .where('a.id', '=', actionId)
    .executeTakeFirst();
  return row?.argumentRules ?? [];
}
