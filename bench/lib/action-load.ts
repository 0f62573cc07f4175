import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { startFakeModel, toolResults } from '../../server/test/helpers/fake-model.ts';
import type pg from 'pg';
import { sentNow } from './harness.ts';
import { signingHeaders } from '../../server/src/features/ingest/verification.ts';
import type { SeededWebhook } from './seed.ts';

/** The action benchmarks' loopback model: one `echo` tool call, then a closing text; at once, or after `delayMs`. */
export async function startEchoModel(delayMs = 0) {
  const model = await startFakeModel(undefined, { keepRequests: false });
  model.script((request) =>
    toolResults(request).length > 0
      ? { text: 'done', delayMs }
      : { toolCalls: [{ name: 'echo', arguments: { text: 'hello' } }], delayMs },
  );
  return model;
}

/** Loads the echo tool that the agents of the action benchmarks are seeded with (seedWebhooks checks it too). */
export const ECHO_TOOL_ENV = { TOOL_MODULES: join(import.meta.dirname, 'echo-tool.ts') };

export const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

export interface ActionPhase {
  offered: number;
  sent: number;
  failures: number;
  completed: number;
  failed: number;
  unfinished: number;
  /** Completed actions per second, from the first post to the last completion. */
  throughput: number;
  /** Post -> the action's `running` event, and post -> its completion (ms, sorted). */
  toRunning: number[];
  toCompleted: number[];
  /**
   * Within the run (ms, sorted; actions with a tool call): `running` -> the first tool call's request,
   * stamped as the model's first answer is handled (the run's context read and the first model call),
   * then that request -> completion (the tool, the second model call and the run's last writes).
   */
  runningToToolCall: number[];
  toolCallToCompleted: number[];
}

/**
 * Signed events at `rate` per second for `seconds` (open loop: a tick every 10 ms posts its share,
 * whether or not earlier actions have finished), over the webhooks and round-robin over the serve
 * URLs; then waits for those actions to finish and reads, from the database, when each started
 * running and when it completed (the server's own timestamps; one machine, one clock).
 */
export async function actionPhase(options: {
  urls: string[];
  webhooks: SeededWebhook[];
  rate: number;
  seconds: number;
  db: pg.Client;
}): Promise<ActionPhase> {
  const { urls, webhooks, rate, seconds, db } = options;
  const sentAt = new Map<string, number>();
  let failures = 0;
  let next = 0;
  const post = async () => {
    const n = next++;
    const webhook = webhooks[n % webhooks.length]!;
    const body = JSON.stringify({ eventType: 'order.created', externalId: randomUUID(), data: { orderId: n } });
    const started = performance.timeOrigin + performance.now();
    try {
      const response = await fetch(`${urls[n % urls.length]}${webhook.path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signingHeaders('wh', webhook.secret, body, sentNow()) },
        body,
      });
      const result = (await response.json()) as { actionId?: string };
      if (response.status === 200 && result.actionId) sentAt.set(result.actionId, started);
      else failures++;
    } catch {
      failures++;
    }
  };
  const inFlight: Array<Promise<void>> = [];
  const begin = Date.now();
  let sent = 0;
  const total = Math.round(seconds * rate);
  while (sent < total) {
    const due = Math.min(total, Math.floor(((Date.now() - begin) / 1000) * rate));
    for (; sent < due; sent++) inFlight.push(post());
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await Promise.all(inFlight);

  const ids = [...sentAt.keys()];
  // Waits by asking only for the phase's actions still unfinished (the status indexes find them), then
  // reads every one once: a full read per poll cost PostgreSQL tens of ms while the service worked.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const { rows: pending } = await db.query<{ n: string }>(
      `select count(*) as n from actions where status in ('queued', 'approved', 'running') and id = any($1)`,
      [ids],
    );
    if (Number(pending[0]!.n) === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const rows: Array<{ id: string; status: string; done_ms: string; running_ms: string | null; call_ms: string | null }> = (
    await db.query(
      `select a.id, a.status, (extract(epoch from a.updated_at) * 1000)::float8 as done_ms,
         (select (extract(epoch from min(e.created_at)) * 1000)::float8 from action_events e where e.action_id = a.id and e.status = 'running') as running_ms,
         (select (extract(epoch from min(t.requested_at)) * 1000)::float8 from tool_calls t where t.action_id = a.id) as call_ms
       from actions a where a.id = any($1) and a.status in ('completed', 'failed')`,
      [ids],
    )
  ).rows;
  const completed = rows.filter((row) => row.status === 'completed');
  // To a tenth of a ms: the post's time is the client's, to the µs; the server's is stored to the ms, rounded.
  const since = (sent: number, at: string) => Math.round((Number(at) - sent) * 10) / 10;
  const byValue = (a: number, b: number) => a - b;
  const toCompleted = completed.map((row) => since(sentAt.get(row.id)!, row.done_ms)).sort(byValue);
  const toRunning = completed
    .filter((row) => row.running_ms !== null)
    .map((row) => since(sentAt.get(row.id)!, row.running_ms!))
    .sort(byValue);
  const stepped = completed.filter((row) => row.running_ms !== null && row.call_ms !== null);
  const lastDone = Math.max(...completed.map((row) => Number(row.done_ms)));
  return {
    offered: sent / seconds,
    sent,
    failures,
    completed: completed.length,
    failed: rows.length - completed.length,
    unfinished: ids.length - rows.length,
    throughput: completed.length / ((lastDone - begin) / 1000),
    toRunning,
    toCompleted,
    runningToToolCall: stepped.map((row) => since(Number(row.running_ms), row.call_ms!)).sort(byValue),
    toolCallToCompleted: stepped.map((row) => since(Number(row.call_ms), row.done_ms)).sort(byValue),
  };
}

/** The database's cumulative work (all sessions): commits and rows written. Stats reach the view within a second or so. */
export async function databaseWork(db: pg.Client): Promise<{ commits: number; rowsWritten: number }> {
  const { rows } = await db.query<{ commits: string; written: string }>(
    `select xact_commit as commits, tup_inserted + tup_updated + tup_deleted as written from pg_stat_database where datname = current_database()`,
  );
  return { commits: Number(rows[0]!.commits), rowsWritten: Number(rows[0]!.written) };
}

/** Commits and rows written per completed action between two readings. */
export function workPerAction(
  before: { commits: number; rowsWritten: number },
  after: { commits: number; rowsWritten: number },
  actions: number,
) {
  return {
    commits: (after.commits - before.commits) / actions,
    rowsWritten: (after.rowsWritten - before.rowsWritten) / actions,
  };
}
