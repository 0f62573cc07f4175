import type { Kysely } from 'kysely';
import type { DB, ToolCallRow } from '../../db/schema.ts';

export const toolCallsRepo = {
  /** The action's calls in the order the model proposed them. */
  forAction: (db: Kysely<DB>, actionId: string): Promise<ToolCallRow[]> =>
    db.selectFrom('toolCalls').selectAll().where('actionId', '=', actionId).orderBy('position').execute(),

  /** A `ready` call waits for a human after all (an interrupted one), with the reason. */
  stage: (trx: Kysely<DB>, id: string, staged: { reason: string; expiresAt: Date }) =>
    trx
      .updateTable('toolCalls')
      .set({ status: 'staged', approval: 'pending', stagedReason: staged.reason, expiresAt: staged.expiresAt })
      .where('id', '=', id)
      .where('status', '=', 'ready')
      .execute(),

  /** The other staged calls of an action end with it. */
  cancelStaged: (trx: Kysely<DB>, actionId: string, at: Date) =>
    trx
      .updateTable('toolCalls')
      .set({ status: 'cancelled', approval: 'cancelled', decidedAt: at })
      .where('actionId', '=', actionId)
      .where('status', '=', 'staged')
      .execute(),

  find: (db: Kysely<DB>, orgId: string, actionId: string, toolCallId: string) =>
    db
      .selectFrom('toolCalls')
      .selectAll()
      .where('orgId', '=', orgId)
      .where('actionId', '=', actionId)
      .where('toolCallId', '=', toolCallId)
      .executeTakeFirst(),

  findById: (db: Kysely<DB>, id: string) => db.selectFrom('toolCalls').selectAll().where('id', '=', id).executeTakeFirst(),
};
