import { sql, type Kysely } from 'kysely';

/**
 * Model names as the API now takes them (31e4e25): trimmed, and a blank one stored as null. A version
 * with a blank name named no model, so every action run with it failed with "no model" even where the
 * server's MODEL_NAME was set; null is what such a name now means (the server's model). Spaces around
 * a name reached the provider as part of it. Nothing else of a version changes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    update agent_versions set model = nullif(regexp_replace(model, '^\\s+|\\s+$', '', 'g'), '')
      where model ~ '^\\s|\\s$' or model = '';
  `.execute(db);
}

/** The names as they were typed are not kept: nothing to undo. */
export async function down(): Promise<void> {}
