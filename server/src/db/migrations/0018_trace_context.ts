import { sql, type Kysely } from 'kysely';

/**
 * Where an action's trace continues (a W3C traceparent, when tracing is on): its ingest request's
 * or its email notification's span, kept on the action, copied to each of its callbacks' outbox
 * rows, so that the worker that runs it and the one that delivers its callbacks join the one trace.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table actions add column trace_parent text;
    alter table callback_deliveries add column trace_parent text;
    alter table email_notifications add column trace_parent text;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    alter table email_notifications drop column trace_parent;
    alter table callback_deliveries drop column trace_parent;
    alter table actions drop column trace_parent;
  `.execute(db);
}
