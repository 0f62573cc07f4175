import type { Kysely } from 'kysely';
import type { DB, RuleApprovers } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import { approversQuery } from './org-approvers.repo.ts';

/** Who decides a rule's calls, and how many of them must approve. */
export interface WhoDecides {
  approvers: RuleApprovers | null;
  minApprovals: number;
}

/**
 * What a rule of who decides must hold when it is written (an action rule's, an inbox assignment's):
 * `body/...` errors, as the request named the fields.
 */
export const approversCheck = {
  /** Approvers named by id must be members of the org (a stranger could never decide, and must not be mailed). */
  async members(db: Kysely<DB>, orgId: string, approvers: RuleApprovers | null | undefined): Promise<void> {
    const userIds = [...new Set(approvers?.userIds ?? [])];
    if (userIds.length === 0) return;
    const members = new Set(
      (
        await db.selectFrom('memberships').select('userId').where('orgId', '=', orgId).where('userId', 'in', userIds).execute()
      ).map((row) => row.userId),
    );
    const strangers = userIds.filter((id) => !members.has(id));
    if (strangers.length > 0)
      throw new AppError('validation_failed', `body/approvers/userIds: not members of the organization: ${strangers.join(', ')}`);
  },

  /** A rule cannot ask for more approvals than it has approvers: its calls would wait until their deadline. */
  async enough(db: Kysely<DB>, orgId: string, approvers: RuleApprovers | null, minApprovals: number): Promise<void> {
    if (minApprovals <= 1) return;
    const count = (await approversQuery(db, orgId, approvers).execute()).length;
    if (count < minApprovals)
      throw new AppError(
        'validation_failed',
        `body/minApprovals: ${minApprovals} approvals needed, but the approvers are ${count} member${count === 1 ? '' : 's'}`,
      );
  },

  /** A change to a rule: the members it names, and enough approvers with what it keeps of `current` (read only if needed). */
  async change(db: Kysely<DB>, orgId: string, changes: Partial<WhoDecides>, current: () => Promise<WhoDecides>): Promise<void> {
    await approversCheck.members(db, orgId, changes.approvers);
    if (changes.approvers === undefined && changes.minApprovals === undefined) return;
    const kept = await current();
    const approvers = changes.approvers === undefined ? kept.approvers : changes.approvers;
    await approversCheck.enough(db, orgId, approvers, changes.minApprovals ?? kept.minApprovals);
  },
};
