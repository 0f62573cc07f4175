import type { Kysely } from 'kysely';
import type { DB } from '../../../db/schema.ts';
import type { Clock } from '../../../lib/clock.ts';
import { AppError } from '../../../lib/errors.ts';
import { standingApprovers } from '../standing-approvals.ts';
import type { ApprovalsService } from '../approvals.service.ts';
import { approvalMailRepo, type LinkRow } from './approval-mail.repo.ts';
import { hashLinkToken } from './approval-notifier.ts';

/** A link's token as we make them (newLinkToken): anything else is not one of ours, and is not looked up. */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** What opening or using a link shows: the decision to confirm, its outcome, or why there is none. */
export type LinkPage =
  | { kind: 'unknown' }
  /** Open: with the approvals given so far (minApprovals over 1), who gave them and why, for this approver to read. */
  | { kind: 'open'; link: LinkRow; approvals: Array<{ email: string | null; reason: string | null }> }
  | { kind: 'used' | 'expired' | 'decided'; link: LinkRow }
  | { kind: 'refused'; link: LinkRow; reason: string }
  /** Decided; an approval that is not the last one needed leaves the call waiting for the others (`waitsFor`). */
  | { kind: 'done'; link: LinkRow; waitsFor: number };

/**
 * The one-time links of approval emails. Opening one (GET) only looks: mail scanners and link
 * previewers fetch links. Using one (POST) decides as its approver, through the same transition as
 * the console, once: the link is marked used, and the approver must still be one, in the decision's
 * own transaction. A refusal is on the call's record like any refused attempt.
 */
export function createApprovalLinks(deps: { db: Kysely<DB>; clock: Clock; approvals: Pick<ApprovalsService, 'decideWith'> }) {
  async function find(token: string): Promise<LinkRow | undefined> {
    return TOKEN.test(token) ? approvalMailRepo.linkByHash(deps.db, hashLinkToken(token)) : undefined;
  }

  async function stateOf(link: LinkRow): Promise<LinkPage> {
    if (link.status !== 'staged') return { kind: 'decided', link };
    if (link.usedAt) return { kind: 'used', link };
    if (link.expiresAt <= deps.clock.now()) return { kind: 'expired', link };
    const approvals = await standingApprovers(deps.db, [link.callRowId]);
    return { kind: 'open', link, approvals: approvals.map(({ email, reason }) => ({ email, reason })) };
  }

  return {
    async view(token: string): Promise<LinkPage> {
      const link = await find(token);
      return link ? stateOf(link) : { kind: 'unknown' };
    },

    async use(token: string, reason: string | null): Promise<LinkPage> {
      const link = await find(token);
      if (!link) return { kind: 'unknown' };
      const at = deps.clock.now();
      let waitsFor = 0;
      try {
        const call = await deps.approvals.decideWith(
          link,
          { userId: link.userId, channel: 'email_link' },
          { kind: link.decision, reason },
          async (trx) => {
            if (!(await approvalMailRepo.useLink(trx, link.id, at))) return 'This link was used already';
            if (link.expiresAt <= at) return 'This link expired at the deadline of the call';
            return undefined;
          },
        );
        if (call.status === 'staged') waitsFor = call.approvalsRequired - call.approvals.length;
      } catch (error) {
        if (error instanceof AppError && (error.code === 'already_decided' || error.code === 'not_an_approver')) {
          // Decided by someone (or by this link before): say by whom; otherwise the link's own refusal.
          const now = (await find(token)) ?? link;
          if (now.status !== 'staged') return { kind: 'decided', link: now };
          // Used before (the call waits for other approvers): the link's own answer.
          return link.usedAt ? { kind: 'used', link: now } : { kind: 'refused', link: now, reason: error.message };
        }
        if (error instanceof AppError && error.code === 'not_found') return { kind: 'unknown' };
        throw error;
      }
      return { kind: 'done', link, waitsFor };
    },
  };
}

export type ApprovalLinks = ReturnType<typeof createApprovalLinks>;
