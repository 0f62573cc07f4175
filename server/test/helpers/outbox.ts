import { randomUUID } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { DB } from '../../src/db/schema.ts';
import type { WebhookSetup } from './webhooks.ts';

/** An action of the webhook (running), as the runner would have it. */
export async function actionOf(db: Kysely<DB>, setup: WebhookSetup): Promise<string> {
  const id = randomUUID();
  await sql`insert into actions (id, org_id, webhook_id, delivery_id, status, event_type, external_id)
    values (${id}, ${setup.tenant.org.id}, ${setup.webhook.id}, ${randomUUID()}, 'running', 'order.created', ${id})`.execute(db);
  return id;
}

/** An outbox row, due `secondsAgo` seconds ago; rows of one action and endpoint are ordered as written. */
export async function outbox(
  db: Kysely<DB>,
  setup: WebhookSetup,
  actionId: string,
  endpointId: string,
  secondsAgo: number,
  event = 'action.completed',
): Promise<string> {
  const id = randomUUID();
  await sql`insert into callback_deliveries (id, org_id, endpoint_id, action_id, event_type, payload, next_attempt_at)
    values (${id}, ${setup.tenant.org.id}, ${endpointId}, ${actionId}, ${event}, ${JSON.stringify({ type: event })}::jsonb,
      now() - ${secondsAgo}::int * interval '1 second')`.execute(db);
  return id;
}
