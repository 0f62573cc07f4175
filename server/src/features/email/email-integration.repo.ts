import { type Insertable, type Kysely, sql } from 'kysely';
import type { EmailIntegrationRow, EmailIntegrationsTable } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';

export const emailIntegrationRepo = {
  find: (db: Kysely<DB>, orgId: string): Promise<EmailIntegrationRow | undefined> =>
    db.selectFrom('emailIntegrations').selectAll().where('orgId', '=', orgId).executeTakeFirst(),

  /**
   * Saves the integration (the caller resets what was known of the sender's domain). One that keeps saved
   * secrets (`kept`: their stored ciphertexts) is written only over the row they were read from: undefined
   * when it was removed or they were replaced meanwhile.
   */
  save: async (
    db: Kysely<DB>,
    row: Omit<Insertable<EmailIntegrationsTable>, 'createdAt' | 'updatedAt'>,
    kept: { apiKeyEncrypted?: string; webhookSecretEncrypted?: string },
  ): Promise<EmailIntegrationRow | undefined> => {
    const written = { ...row, updatedAt: sql<Date>`now()` };
    if (kept.apiKeyEncrypted === undefined && kept.webhookSecretEncrypted === undefined)
      return db
        .insertInto('emailIntegrations')
        .values(row)
        .onConflict((oc) => oc.column('orgId').doUpdateSet(written))
        .returningAll()
        .executeTakeFirstOrThrow();
    let update = db.updateTable('emailIntegrations').set(written).where('orgId', '=', row.orgId);
    if (kept.apiKeyEncrypted !== undefined) update = update.where('apiKeyEncrypted', '=', kept.apiKeyEncrypted);
    if (kept.webhookSecretEncrypted !== undefined)
      update = update.where('webhookSecretEncrypted', '=', kept.webhookSecretEncrypted);
    return update.returningAll().executeTakeFirst();
  },

  recordDomainCheck: (
    db: Kysely<DB>,
    orgId: string,
    fromEmail: string,
    check: { status: string | null; receiving: boolean | null; at: Date },
  ) =>
    db
      .updateTable('emailIntegrations')
      .set({ domainStatus: check.status, domainReceiving: check.receiving, domainCheckedAt: check.at })
      .where('orgId', '=', orgId)
      .where('fromEmail', '=', fromEmail)
      .returningAll()
      .executeTakeFirst(),

  /** Whether there was one to delete. */
  remove: async (db: Kysely<DB>, orgId: string): Promise<boolean> =>
    (await db.deleteFrom('emailIntegrations').where('orgId', '=', orgId).executeTakeFirst()).numDeletedRows > 0n,
};
