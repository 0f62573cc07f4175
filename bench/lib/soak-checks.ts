import type pg from 'pg';
import type { Receipt, SentEvent } from './soak-traffic.ts';

/** One figure the soak prints; `ok` false makes the soak fail. */
export interface SoakFigure {
  name: string;
  value: number;
  ok: boolean;
}

const FINAL = ['completed', 'failed', 'rejected', 'expired'];

/** Work still moving: actions not final nor waiting for a human, callbacks not yet delivered. */
export async function unsettled(db: pg.Client) {
  const { rows } = await db.query<{ actions: number; approvals: number; callbacks: number }>(
    `select
       (select count(*)::int from actions where status <> all($1) and status <> 'pending_approval') as actions,
       (select count(*)::int from actions where status = 'pending_approval') as approvals,
       (select count(*)::int from callback_deliveries where status = 'pending') as callbacks`,
    [FINAL],
  );
  return rows[0]!;
}

/** The soak's end checks, each a figure (see the issue: 0 lost, 0 duplicates, 0 doubles, all final, callbacks in order). */
export async function checkSoak(
  db: pg.Client,
  sent: SentEvent[],
  receipts: Receipt[],
  options: { jobsSchema: string },
): Promise<SoakFigure[]> {
  const figures: SoakFigure[] = [];
  const figure = (name: string, value: number, expectZero = true) =>
    figures.push({ name, value, ok: !expectZero || value === 0 });

  // Every acknowledged event is in the ledger, with its action where it got one.
  const answered = sent.filter((event) => event.status === 200 || event.status === 202);
  figure('events sent (external ids counted per send)', sent.length, false);
  figure('events acknowledged 200/202', answered.length, false);
  figure('events never answered (sender gave up)', sent.filter((event) => event.status === undefined).length, false);
  figure('events answered 4xx', sent.filter((event) => event.status !== undefined && event.status >= 400).length);
  const actionIds = answered.map((event) => event.body?.actionId).filter((id): id is string => Boolean(id));
  const eventIds = answered.map((event) => event.body?.eventId).filter((id): id is string => Boolean(id));
  const { rows: foundActions } = await db.query<{ id: string }>(
    'select a.id from actions a join webhook_deliveries d on d.action_id = a.id where a.id = any($1::uuid[])',
    [actionIds],
  );
  const found = new Set(foundActions.map((row) => row.id));
  const { rows: foundEvents } = await db.query<{ id: string }>('select id from webhook_deliveries where id = any($1::uuid[])', [
    eventIds,
  ]);
  figure(
    'lost: acknowledged, but not in the ledger',
    new Set(actionIds.filter((id) => !found.has(id))).size + (eventIds.length - foundEvents.length),
  );

  // One action per external id, and every answer for one external id names that action.
  const { rows: duplicated } = await db.query<{ n: number }>(
    `select count(*)::int as n from (select org_id, external_id from actions where external_id is not null group by 1, 2 having count(*) > 1) d`,
  );
  figure('external ids with two actions', duplicated[0]!.n);
  const actionOf = new Map<string, string>();
  let disagreeing = 0;
  for (const event of answered) {
    const id = event.body?.actionId;
    if (!id) continue;
    const earlier = actionOf.get(event.externalId);
    if (earlier && earlier !== id) disagreeing++;
    actionOf.set(event.externalId, id);
  }
  figure('external ids answered with two different actions', disagreeing);

  // Tool side effects: once per action (under one tool call id), and every completed action has its own.
  const { rows: effects } = await db.query<{ doubled: number; reexecuted: number; missing: number; total: number }>(
    `select
       (select count(*)::int from (select action_id from soak_effects group by 1 having count(*) > 1) x) as doubled,
       (select coalesce(sum(executions - 1), 0)::int from soak_effects) as reexecuted,
       (select count(*)::int from actions a where a.status = 'completed' and not exists (select 1 from soak_effects e where e.action_id = a.id)) as missing,
       (select count(*)::int from soak_effects) as total`,
  );
  figure('tool side effects', effects[0]!.total, false);
  figure('tool side effects done twice for one action', effects[0]!.doubled);
  figure('re-executions of one tool call (absorbed by its idempotency key)', effects[0]!.reexecuted, false);
  figure('completed actions without their side effect', effects[0]!.missing);

  // Every action final, or waiting for its approval.
  const { rows: statuses } = await db.query<{ status: string; n: number }>(
    'select status, count(*)::int as n from actions group by 1',
  );
  for (const { status, n } of statuses) figure(`actions ${status}`, n, !FINAL.includes(status) && status !== 'pending_approval');

  // Callbacks: each due one received, in lifecycle order per action and endpoint, redeliveries alike.
  const { rows: callbacks } = await db.query<{ id: string; action_id: string; endpoint_id: string; seq: string; status: string }>(
    'select id, action_id, endpoint_id, seq, status from callback_deliveries',
  );
  const byId = new Map(callbacks.map((row) => [row.id, row]));
  const delivered = new Set(receipts.filter((receipt) => receipt.answered === 200).map((receipt) => receipt.webhookId));
  figure('callbacks due', callbacks.length, false);
  figure('callback attempts received (500s included)', receipts.length, false);
  figure('callbacks due but never received with a 200', callbacks.filter((row) => !delivered.has(row.id)).length);
  figure('callbacks not recorded as succeeded', callbacks.filter((row) => row.status !== 'succeeded').length);
  const successes = receipts.filter((receipt) => receipt.answered === 200).length;
  figure(
    'callbacks received with a 200 more than once (at least once: a process died before recording)',
    successes - delivered.size,
    false,
  );
  figure('callbacks received with an unknown webhook-id', receipts.filter((receipt) => !byId.has(receipt.webhookId)).length);
  const firstBody = new Map<string, string>();
  let changed = 0;
  for (const receipt of receipts) {
    const first = firstBody.get(receipt.webhookId);
    if (first === undefined) firstBody.set(receipt.webhookId, receipt.body);
    else if (first !== receipt.body) changed++;
  }
  figure('redeliveries whose body differs under the same webhook-id', changed);
  // Arrival order: a callback may arrive only once every earlier one of its action and endpoint got its 200.
  const seqsOf = new Map<string, number[]>();
  for (const row of callbacks) {
    const key = `${row.action_id} ${row.endpoint_id}`;
    seqsOf.set(key, [...(seqsOf.get(key) ?? []), Number(row.seq)]);
  }
  const succeeded = new Set<string>();
  let outOfOrder = 0;
  for (const receipt of receipts) {
    const row = byId.get(receipt.webhookId);
    if (!row) continue;
    const key = `${row.action_id} ${row.endpoint_id}`;
    const earlier = (seqsOf.get(key) ?? []).filter((seq) => seq < Number(row.seq));
    if (earlier.some((seq) => !succeeded.has(`${key} ${seq}`))) outOfOrder++;
    if (receipt.answered === 200) succeeded.add(`${key} ${row.seq}`);
  }
  figure('callbacks received before an earlier one of their action and endpoint', outOfOrder);

  // Leases: nothing held by a dead process.
  const { rows: leases } = await db.query<{ actions: number; notifications: number; jobs: number }>(
    `select
       (select count(*)::int from actions where status = 'running') as actions,
       (select count(*)::int from email_notifications where lease_expires_at is not null) as notifications,
       (select count(*)::int from ${options.jobsSchema}.job where state = 'active') as jobs`,
  );
  figure('action leases left after quiescence', leases[0]!.actions);
  figure('email notification leases left after quiescence', leases[0]!.notifications);
  // Runs are claimed from the actions table (their leases are counted above); a queue job a killed
  // worker held stays active until its own expiry, and blocks nothing meanwhile.
  figure('queue jobs active at the end (cron and email jobs; each lapses at its expiry)', leases[0]!.jobs, false);
  return figures;
}
