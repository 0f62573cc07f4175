import { sql, type Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { AppError } from '../../lib/errors.ts';
import type { Decision, Ingress, Outcome } from './delivery-pipeline.ts';
import { requestToolApprovals } from './payload.ts';
import { insertQueuedActions } from '../actions/actions.repo.ts';
import type { CommitNotice } from '../../lib/process-bus.ts';

/** One delivery outcome to store; `existing` for a stored row being retried or replayed. */
export interface DeliveryWrite {
  ingress: Ingress;
  decision: Decision;
  nextAttemptAt: Date | null;
  existing?: { expectedAttempts: number; attempts: number };
}

export type WriteResult = Outcome | AppError;

/** What a stored write did: its result, and the id of the action it created, if it created one. */
export interface Stored {
  results: WriteResult[];
  createdActionIds: string[];
}

const replayedWithOtherBody = () =>
  new AppError('message_replayed', 'This message id was already received with a different body');
const claimKey = (webhookId: string, messageId: string) => `${webhookId} ${messageId}`;
const externalKey = (webhookId: string, externalId: string) => `${webhookId} ${externalId}`;

/**
 * New deliveries, any number, in one statement: the wh-id claims (the first claim of a (webhook, id)
 * wins; any other, in this batch or before, is a replay), the actions (idempotent on (webhook,
 * externalId): a conflict means the action exists already, and a duplicate adds no delivery row), the
 * delivery rows, and with `notice` the NOTIFY that wakes other processes' run dispatchers. One statement
 * is one round trip whatever the batch size, and the database decides replays and duplicates (ON
 * CONFLICT), so they hold across batches and processes.
 */
export async function insertNewDeliveries(trx: Kysely<DB>, items: DeliveryWrite[], notice?: CommitNotice): Promise<Stored> {
  const input = items.map(({ ingress, decision, nextAttemptAt }, idx) => ({
    idx,
    event_id: ingress.eventId,
    org_id: ingress.webhook.orgId,
    webhook_id: ingress.webhook.id,
    message_id: ingress.messageId ?? null,
    body_digest: ingress.bodyDigest ?? null,
    status: decision.status === 'create' ? 'accepted' : decision.status,
    reason: decision.status === 'create' ? null : decision.reason,
    next_attempt_at: decision.status === 'buffered' ? nextAttemptAt : null,
    ...(decision.status === 'create' && {
      action_id: crypto.randomUUID(),
      agent_id: decision.agentId,
      action_rule_id: decision.actionRuleId,
      run_as_user_id: decision.runAsUserId,
      instructions: decision.instructions,
      tool_approvals: requestToolApprovals(ingress.payload, ingress.webhook.allowRequestOverrides),
    }),
    payload: ingress.payload,
    raw_body: ingress.rawBody,
    headers: ingress.headers,
    verification_scheme: ingress.webhook.verificationScheme,
    source_ip: ingress.sourceIp,
    trace_parent: ingress.traceParent ?? null,
  }));

  const { rows } = await sql<{ idx: number; fresh: boolean; created: boolean; existingId: string | null }>`
    with input as (
      select * from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as i(
        idx int, event_id uuid, org_id uuid, webhook_id uuid, message_id text, body_digest text, status text, reason text,
          next_attempt_at timestamptz,
        action_id uuid, agent_id uuid, action_rule_id uuid, run_as_user_id uuid, instructions text, tool_approvals jsonb,
        payload jsonb, raw_body text, headers jsonb, verification_scheme text, source_ip text, trace_parent text)
    ),
    first_claims as (
      select distinct on (webhook_id, message_id) idx, webhook_id, message_id, body_digest, event_id,
        payload->>'externalId' as external_id
      from input where message_id is not null order by webhook_id, message_id, idx
    ),
    claimed as (
      insert into webhook_message_ids (webhook_id, message_id, body_digest, event_id, external_id)
      select webhook_id, message_id, body_digest, event_id, external_id from first_claims
      on conflict do nothing returning webhook_id, message_id
    ),
    fresh as (
      select * from input where message_id is null
      union all
      select i.* from input i join first_claims f using (idx) join claimed c on c.webhook_id = f.webhook_id
        and c.message_id = f.message_id
    ),
    created as (${insertQueuedActions(sql`
      select distinct on (webhook_id, coalesce(payload->>'externalId', action_id::text))
        action_id as id, org_id, webhook_id, event_id as delivery_id, agent_id, action_rule_id, run_as_user_id,
        payload->>'eventType' as event_type, payload->>'externalId' as external_id, instructions,
        coalesce(payload->'data', '{}') as data, tool_approvals,
        trace_parent
      from fresh where status = 'accepted'
      order by webhook_id, coalesce(payload->>'externalId', action_id::text), idx`)}
    ),
    delivered as (
      insert into webhook_deliveries (id, org_id, webhook_id, action_id, status, reason, next_attempt_at,
        event_type, external_id, payload, raw_body, headers, verification_scheme, source_ip, message_id)
      select event_id, org_id, webhook_id, action_id, status, reason, next_attempt_at,
        payload->>'eventType', payload->>'externalId', payload, raw_body, headers, verification_scheme, source_ip, message_id
      from fresh where status <> 'accepted' or action_id in (select id from created)
    ) -- the notice goes as the statement commits, if it created actions (an uncorrelated subquery: run once)
    select ${notice ? sql`(select pg_notify(${notice.channel}, ${notice.payload}) from created limit 1)` : sql`null`} as notified,
      i.idx, i.idx in (select idx from fresh) as fresh, c.id is not null as created,
      case when i.status = 'accepted' and c.id is null then coalesce(
        (select w.action_id from input w join created wc on wc.id = w.action_id where w.webhook_id = i.webhook_id
          and w.payload->>'externalId' = i.payload->>'externalId'),
        (select a.id from actions a where a.webhook_id = i.webhook_id
          and a.external_id = i.payload->>'externalId')) end as existing_id
    from input i left join created c on c.id = i.action_id
    order by i.idx
  `.execute(trx);

  // A duplicate is answered with the existing action: one this batch created, one stored before
  // this statement, or (rarely) one a concurrent transaction committed after this statement began,
  // which only a new statement sees.
  const unresolved = rows.filter((row) => row.fresh && input[row.idx]!.status === 'accepted' && !row.created && !row.existingId);
  const lateIds =
    unresolved.length === 0
      ? new Map<string, string>()
      : await existingActionIds(
          trx,
          unresolved.map((row) => items[row.idx]!.ingress),
        );

  const results = rows.map((row): WriteResult | undefined => {
    const { ingress } = items[row.idx]!;
    const { status, reason, action_id: actionId } = input[row.idx]!;
    if (!row.fresh) return undefined; // a retry of a message id: answered below
    if (status !== 'accepted') return { status: status as 'buffered' | 'skipped', eventId: ingress.eventId, reason: reason! };
    if (row.created) return { status: 'accepted', eventId: ingress.eventId, actionId: actionId!, alreadyExists: false };
    const existingId = row.existingId ?? lateIds.get(externalKey(ingress.webhook.id, ingress.payload.externalId!))!;
    return { status: 'accepted', eventId: ingress.eventId, actionId: existingId, alreadyExists: true };
  });
  const retries = rows.filter((row) => !row.fresh).map((row) => row.idx);
  if (retries.length > 0) await answerRetries(trx, items, results, retries);
  return {
    results: results as WriteResult[],
    createdActionIds: rows.filter((row) => row.created).map((row) => input[row.idx]!.action_id!),
  };
}

/**
 * A message id received before (by this batch or earlier) with the same body gets the answer the
 * first one got: its action, or its buffered or skipped event; with another body, message_replayed.
 */
async function answerRetries(
  trx: Kysely<DB>,
  items: DeliveryWrite[],
  results: (WriteResult | undefined)[],
  retries: number[],
): Promise<void> {
  const firstInBatch = new Map<string, number>();
  items.forEach(({ ingress }, idx) => {
    const key = ingress.messageId && claimKey(ingress.webhook.id, ingress.messageId);
    if (key && results[idx] !== undefined && !firstInBatch.has(key)) firstInBatch.set(key, idx);
  });
  const earlier = retries.filter(
    (idx) => !firstInBatch.has(claimKey(items[idx]!.ingress.webhook.id, items[idx]!.ingress.messageId!)),
  );
  const stored =
    earlier.length === 0
      ? new Map<string, FirstAnswer>()
      : await firstAnswers(
          trx,
          earlier.map((idx) => items[idx]!.ingress),
        );
  for (const idx of retries) {
    const { ingress } = items[idx]!;
    const key = claimKey(ingress.webhook.id, ingress.messageId!);
    const batchFirst = firstInBatch.get(key);
    if (batchFirst !== undefined) {
      results[idx] = items[batchFirst]!.ingress.bodyDigest === ingress.bodyDigest ? results[batchFirst] : replayedWithOtherBody();
      continue;
    }
    const first = stored.get(key);
    results[idx] =
      first && first.bodyDigest === ingress.bodyDigest ? (toOutcome(first) ?? replayedWithOtherBody()) : replayedWithOtherBody();
  }
}

interface FirstAnswer {
  webhookId: string;
  messageId: string;
  bodyDigest: string | null;
  eventId: string | null;
  status: string | null;
  reason: string | null;
  actionId: string | null;
  duplicateOf: string | null;
}

/**
 * What answered a message id: its delivery (the event it became), or for a duplicate externalId (no delivery row), that
 * action.
 */
async function firstAnswers(trx: Kysely<DB>, ingresses: Ingress[]): Promise<Map<string, FirstAnswer>> {
  const rows = await trx
    .selectFrom('webhookMessageIds as c')
    .leftJoin('webhookDeliveries as d', 'd.id', 'c.eventId')
    .leftJoin('actions as a', (join) => join.onRef('a.webhookId', '=', 'c.webhookId').onRef('a.externalId', '=', 'c.externalId'))
    .select([
      'c.webhookId',
      'c.messageId',
      'c.bodyDigest',
      'c.eventId',
      'd.status',
      'd.reason',
      'd.actionId',
      'a.id as duplicateOf',
    ])
    .where((eb) =>
      eb.or(
        ingresses.map(({ webhook, messageId }) =>
          eb.and([eb('c.webhookId', '=', webhook.id), eb('c.messageId', '=', messageId!)]),
        ),
      ),
    )
    .execute();
  return new Map(rows.map((row) => [claimKey(row.webhookId, row.messageId), row]));
}

function toOutcome(first: FirstAnswer): Outcome | undefined {
  if (!first.eventId) return undefined;
  if (first.actionId) return { status: 'accepted', eventId: first.eventId, actionId: first.actionId, alreadyExists: false };
  if (first.status === 'skipped') return { status: 'skipped', eventId: first.eventId, reason: first.reason! };
  if (first.status) return { status: 'buffered', eventId: first.eventId, reason: first.reason ?? first.status };
  // No delivery row: the event was a duplicate of an action with its externalId.
  return first.duplicateOf
    ? { status: 'accepted', eventId: first.eventId, actionId: first.duplicateOf, alreadyExists: true }
    : undefined;
}

async function existingActionIds(trx: Kysely<DB>, ingresses: Ingress[]): Promise<Map<string, string>> {
  const rows = await trx
    .selectFrom('actions')
    .select(['id', 'webhookId', 'externalId'])
    .where((eb) =>
      eb.or(
        ingresses.map(({ webhook, payload }) =>
          eb.and([eb('webhookId', '=', webhook.id), eb('externalId', '=', payload.externalId!)]),
        ),
      ),
    )
    .execute();
  return new Map(rows.map((row) => [externalKey(row.webhookId!, row.externalId!), row.id]));
}

/**
 * A stored delivery retried or replayed: creates its action when today's configuration says so and
 * updates the row, which it claims by its attempt count, so that a retry and a replay of one
 * delivery cannot both write (and both create an action).
 */
export async function updateStoredDelivery(
  trx: Kysely<DB>,
  item: DeliveryWrite & { existing: NonNullable<DeliveryWrite['existing']> },
): Promise<Stored> {
  const { ingress, decision, existing } = item;
  let actionId: string | null = null;
  let created = false;
  if (decision.status === 'create') {
    const { webhook, payload, eventId } = ingress;
    const {
      rows: [inserted],
    } = await insertQueuedActions(sql`
      select ${crypto.randomUUID()}::uuid as id, ${webhook.orgId}::uuid as org_id, ${webhook.id}::uuid as webhook_id,
        ${eventId}::uuid as delivery_id,
        ${decision.agentId}::uuid as agent_id, ${decision.actionRuleId}::uuid as action_rule_id,
          ${decision.runAsUserId}::uuid as run_as_user_id,
        ${payload.eventType}::text as event_type, ${payload.externalId ?? null}::text as external_id,
          ${decision.instructions}::text as instructions,
        ${JSON.stringify(payload.data ?? {})}::jsonb as data,
        ${JSON.stringify(requestToolApprovals(payload, webhook.allowRequestOverrides))}::jsonb as tool_approvals,
        ${ingress.traceParent ?? null}::text as trace_parent`).execute(trx);
    created = inserted !== undefined;
    actionId = inserted?.id ?? (await existingActionIds(trx, [ingress])).get(externalKey(webhook.id, payload.externalId!))!;
  }
  const status = decision.status === 'create' ? 'accepted' : decision.status;
  const reason = decision.status === 'create' ? null : decision.reason;
  const updated = await trx
    .updateTable('webhookDeliveries')
    .set({
      status,
      reason,
      actionId,
      nextAttemptAt: status === 'buffered' ? item.nextAttemptAt : null,
      attempts: existing.attempts,
      updatedAt: sql<Date>`now()`,
    })
    .where('id', '=', ingress.eventId)
    .where('attempts', '=', existing.expectedAttempts)
    .executeTakeFirst();
  if (updated.numUpdatedRows === 0n) throw new AppError('conflict', 'This delivery is being processed right now');
  const result: Outcome = actionId
    ? { status: 'accepted', eventId: ingress.eventId, actionId, alreadyExists: !created }
    : { status: status as 'buffered' | 'skipped', eventId: ingress.eventId, reason: reason! };
  return { results: [result], createdActionIds: created ? [actionId!] : [] };
}
