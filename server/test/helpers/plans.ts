import { sql, type Kysely } from 'kysely';
import type { DB } from '../../src/db/schema.ts';
import type { WebhookSetup } from './webhooks.ts';

/**
 * Completed actions of the setup's webhook, so that `actions` has some size: on a tiny table any plan
 * costs about the same, and PostgreSQL takes the generic one whatever the statement.
 */
export async function fillActions(db: Kysely<DB>, setup: WebhookSetup, count: number): Promise<void> {
  await sql`insert into actions (id, org_id, webhook_id, delivery_id, status, event_type, external_id)
    select gen_random_uuid(), ${setup.tenant.org.id}, ${setup.webhook.id}, gen_random_uuid(), 'completed', 'order.created',
      'filler-' || n
    from generate_series(1, ${count}::int) as n`.execute(db);
}

/**
 * Runs `statements` on one connection and returns how many custom and generic plans they gave the
 * connection's prepared statements whose text holds `fragment` (db/prepared.ts names them).
 */
export async function plansOf(
  db: Kysely<DB>,
  fragment: string,
  statements: (connection: Kysely<DB>) => Promise<void>,
): Promise<{ custom: number; generic: number }> {
  const plans = async (connection: Kysely<DB>) =>
    (
      await sql<{ generic: number; custom: number }>`
        select coalesce(sum(generic_plans), 0)::int as generic, coalesce(sum(custom_plans), 0)::int as custom
        from pg_prepared_statements where strpos(statement, ${fragment}) > 0`.execute(connection)
    ).rows[0]!;
  return db.connection().execute(async (connection) => {
    const before = await plans(connection);
    await statements(connection);
    const after = await plans(connection);
    return { custom: after.custom - before.custom, generic: after.generic - before.generic };
  });
}
