import { type Insertable, type Kysely, sql } from 'kysely';
import type { EmailIntegrationRow, EmailIntegrationsTable } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';

export const emailIntegrationRepo = {
  find: (db: Kysely<DB>, orgId: string): Promise<EmailIntegrationRow | undefined> =>
    db.selectFrom('emailIntegrations').selectAll().where('orgId', '=', orgId).executeTakeFirst(),

  /** Saves the integration (the caller resets what was known of the sender's domain). */
  upsert: (
    db: Kysely<DB>,
    row: Omit<Insertable<EmailIntegrationsTable>, 'createdAt' | 'updatedAt'>,
  ): Promise<EmailIntegrationRow> =>
    db
      .insertInto('emailIntegrations')
      .values(row)
      .onConflict((oc) => oc.column('orgId').doUpdateSet({ ...row, updatedAt: sql<Date>`now()` }))
      .returningAll()
      .executeTakeFirstOrThrow(),

  /**
   * Writes over the saved integration only while the secrets it keeps are still those read (their stored
   * ciphertexts): undefined when it was removed or they were replaced meanwhile.
   */
  updateKeeping: (
    db: Kysely<DB>,
    row: Omit<Insertable<EmailIntegrationsTable>, 'createdAt' | 'updatedAt'>,
    kept: { apiKeyEncrypted?: string; webhookSecretEncrypted?: string },
  ): Promise<EmailIntegrationRow | undefined> => {
    let update = db
      .updateTable('emailIntegrations')
      .set({ ...row, updatedAt: sql<Date>`now()` })
      .where('orgId', '=', row.orgId);
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
