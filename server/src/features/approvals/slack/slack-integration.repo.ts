import { type Insertable, type Kysely, sql } from 'kysely';
import type { DB, SlackIntegrationsTable } from '../../../db/schema.ts';

export const slackIntegrationRepo = {
  find: (db: Kysely<DB>, orgId: string) =>
    db.selectFrom('slackIntegrations').selectAll().where('orgId', '=', orgId).executeTakeFirst(),

  /**
   * Connects the app. One that keeps saved secrets (`kept`: their stored ciphertexts) is written only over
   * the row they were read from: undefined when it was removed or they were replaced meanwhile.
   */
  save: async (
    db: Kysely<DB>,
    row: Omit<Insertable<SlackIntegrationsTable>, 'createdAt' | 'updatedAt'>,
    kept: { botToken?: string; signingSecret?: string },
  ) => {
    const written = { ...row, updatedAt: sql<Date>`now()` };
    if (kept.botToken === undefined && kept.signingSecret === undefined)
      return db
        .insertInto('slackIntegrations')
        .values(row)
        .onConflict((oc) => oc.column('orgId').doUpdateSet(written))
        .returningAll()
        .executeTakeFirstOrThrow();
    let update = db.updateTable('slackIntegrations').set(written).where('orgId', '=', row.orgId);
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
