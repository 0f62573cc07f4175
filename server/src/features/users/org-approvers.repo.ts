import type { Kysely } from 'kysely';
import type { DB, RuleApprovers } from '../../db/schema.ts';

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
