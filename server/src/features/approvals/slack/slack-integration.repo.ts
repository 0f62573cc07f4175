import { type Insertable, type Kysely, sql } from 'kysely';
import type { DB, SlackIntegrationsTable } from '../../../db/schema.ts';

export const slackIntegrationRepo = {
  find: (db: Kysely<DB>, orgId: string) =>
    db.selectFrom('slackIntegrations').selectAll().where('orgId', '=', orgId).executeTakeFirst(),

  upsert: (db: Kysely<DB>, row: Omit<Insertable<SlackIntegrationsTable>, 'createdAt' | 'updatedAt'>) =>
    db
      .insertInto('slackIntegrations')
      .values(row)
      .onConflict((oc) => oc.column('orgId').doUpdateSet({ ...row, updatedAt: sql<Date>`now()` }))
      .returningAll()
      .executeTakeFirstOrThrow(),

  /**
   * Writes over the connected app only while the secrets it keeps are still those read (their stored
   * ciphertexts): undefined when it was removed or they were replaced meanwhile.
   */
  updateKeeping: (
    db: Kysely<DB>,
    row: Omit<Insertable<SlackIntegrationsTable>, 'createdAt' | 'updatedAt'>,
    kept: { botToken?: string; signingSecret?: string },
  ) => {
    let update = db
      .updateTable('slackIntegrations')
      .set({ ...row, updatedAt: sql<Date>`now()` })
      .where('orgId', '=', row.orgId);
    if (kept.botToken !== undefined) update = update.where('botToken', '=', kept.botToken);
    if (kept.signingSecret !== undefined) update = update.where('signingSecret', '=', kept.signingSecret);
    return update.returningAll().executeTakeFirst();
  },

  remove: async (db: Kysely<DB>, orgId: string): Promise<boolean> =>
    (await db.deleteFrom('slackIntegrations').where('orgId', '=', orgId).executeTakeFirst()).numDeletedRows > 0n,

  /** Takes an interaction's signature once: false when it was taken before (a replay). Old ones are let go. */
  takeSignature: async (db: Kysely<DB>, signature: string, olderThan: Date): Promise<boolean> => {
    await db.deleteFrom('slackInteractionsSeen').where('createdAt', '<', olderThan).execute();
    const taken = await db
      .insertInto('slackInteractionsSeen')
      .values({ signature })
      .onConflict((oc) => oc.column('signature').doNothing())
      .executeTakeFirst();
    return (taken.numInsertedOrUpdatedRows ?? 0n) > 0n;
  },
};

export type SlackIntegrationRow = NonNullable<Awaited<ReturnType<typeof slackIntegrationRepo.find>>>;
