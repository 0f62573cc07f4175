import { randomUUID } from 'node:crypto';
import { type Insertable, type Kysely, type RawBuilder, sql } from 'kysely';
// The one sideways import between features: a transition writes its callbacks' outbox rows in its
// own statement (callbacks never import actions).
import { CALLBACK_EVENT_OF, callbackDetails, OUTBOX_CTE } from '../callbacks/outbox.ts';
import type { DB, ModelCallsTable, ThreadMessagesTable, ToolCallsTable } from '../../db/schema.ts';
import { PLANNED_PER_CALL, uncountedIds } from '../../db/prepared.ts';
import { approvalStateOf, canTransition, IllegalTransitionError, type Transition } from './lifecycle.ts';
import type { Message } from './run-context.ts';

/** What one step of an action stores at once; every part but the action is optional. */
export interface ActionWrite {
  actionId: string;
  /**
   * The token of the claim the writing run holds (a run's writes carry it): when another claim took the
   * action since, the statement is refused whole (isRunClaimLost). Writes of people's decisions carry none.
   */
  runToken?: string;
  /** The action's conversation, opened with its first step: the thread, linked to the action. */
  thread?: { id: string; orgId: string; userId: string; title: string; actionId: string };
  messages?: Insertable<ThreadMessagesTable>[];
  /** Tool calls a model step proposed, as decided. */
  toolCalls?: Insertable<ToolCallsTable>[];
  /** A call that may not be repeated is about to be sent: recorded (and committed) before it leaves. */
  startedCall?: { id: string; startedAt: Date };
  /** A tool call's result (only a call still `ready` takes it). */
  finishedCall?: { id: string; status: 'completed' | 'failed'; output: unknown; completedAt: Date };
  transition?: Transition;
  /** The model call the step made: its tokens, duration and cost. */
  modelCall?: Insertable<ModelCallsTable>;
}

export interface ActionWriteResult {
  /** The transition happened (false: the action was no longer in `from`, or there was none). */
  moved: boolean;
  /** Callbacks the transition wrote: announce them once committed. */
  callbacks: number;
  /** The thread was linked to the action (false: the action had one already, another runner's). */
  linked: boolean;
}

/** From this many writes, the statement is planned at its call (about 1 ms of PostgreSQL's CPU). */
const PLANNED_FROM_WRITES = 8;

/**
 * Stores the writes of any number of actions in one statement: threads, messages, tool calls and their
 * results, and lifecycle transitions with their ledger events and the callbacks that announce them
 * (the outbox). Rows come in as arrays, so the text depends only on which parts the batch has: it is
 * prepared for a few writes and planned at the call for many. A transition is never announced
 * without happening, nor the reverse; inside a caller's transaction it commits with it. One write per
 * action in one call (a row is updated once per statement: more throws, and a group commit then
 * writes them one by one). (thread, seq) is unique: two runners that somehow both continue one
 * conversation cannot both write its next step; the second fails, and with it the statement.
 */
export async function writeActions(db: Kysely<DB>, writes: ActionWrite[]): Promise<ActionWriteResult[]> {
  if (new Set(writes.map((write) => write.actionId)).size < writes.length)
    throw new Error('writeActions takes one write per action in one statement');
  const batch = rowsOf(writes);
  for (const step of batch.steps)
    if (!canTransition(step.from, step.to))
      throw new IllegalTransitionError(`An action cannot go from ${step.from} to ${step.to}`);
  // A batch of many writes is planned with its values (a generic plan assumes 100 rows per array, at the
  // table sizes of when it was made). A small one runs prepared: PostgreSQL keeps its generic plan while
  // that is the cheaper, and planning costs a one-run batch more than running it.
  const planning = sql.raw(writes.length >= PLANNED_FROM_WRITES ? `${PLANNED_PER_CALL}\n` : '');
  // Only the parts this batch has are in the statement: a step that only moves an action does not
  // open the tables of threads, messages and calls.
  const parts = [...fenceParts(batch), ...conversationParts(batch), ...callParts(batch), ...transitionParts(batch)].filter(
    (part): part is RawBuilder<unknown> => part !== false,
  );
  const ctes = parts.length > 0 ? sql`with ${sql.join(parts, sql`, `)} ` : sql``;
  const none = sql`'{}'::text[]`;
  const moves = batch.steps.length > 0;
  const result = await sql<{ moved: string[]; announced: string[]; linked: string[] }>`${planning}${ctes}
    select ${moves ? sql`(select coalesce(array_agg(id::text), '{}') from moved)` : none} as moved,
      ${moves ? sql`(select coalesce(array_agg(action_id::text), '{}') from callbacks)` : none} as announced,
      ${batch.links.length > 0 ? sql`(select coalesce(array_agg(id::text), '{}') from linked)` : none} as linked
      ${batch.claims.length > 0 ? sql`, (select bool_or(lost) from claims_lost) as lost` : sql``}`.execute(db);
  const { moved, announced, linked } = result.rows[0]!;
  return writes.map((write) => {
    const actionId = write.transition?.actionId;
    return {
      moved: actionId !== undefined && moved.includes(actionId),
      callbacks: actionId === undefined ? 0 : announced.filter((id) => id === actionId).length,
      linked: write.thread !== undefined && (write.transition ? moved : linked).includes(write.thread.actionId),
    };
  });
}

/** The batch's rows, table by table. */
function rowsOf(writes: ActionWrite[]) {
  return {
    claims: writes.flatMap((write) => (write.runToken ? [{ actionId: write.actionId, token: write.runToken }] : [])),
    threads: writes.flatMap((write) => (write.thread ? [write.thread] : [])),
    // A thread opened with a transition is linked by it: the action's row is updated once.
    links: writes.flatMap((write) => (write.thread && !write.transition ? [write.thread] : [])),
    messages: writes.flatMap((write) => write.messages ?? []),
    calls: writes.flatMap((write) => write.toolCalls ?? []),
    usage: writes.flatMap((write) => (write.modelCall ? [write.modelCall] : [])),
    started: writes.flatMap((write) => (write.startedCall ? [write.startedCall] : [])),
    finished: writes.flatMap((write) => (write.finishedCall ? [write.finishedCall] : [])),
    steps: writes.flatMap((write) => (write.transition ? [{ ...write.transition, threadId: write.thread?.id ?? null }] : [])),
  };
}
type Rows = ReturnType<typeof rowsOf>;

const json = (value: unknown) => JSON.stringify(value) ?? null;

/**
 * The runs' claims: a write whose token is no longer the action's raises (run_claim_lost, migration
 * 0040), which refuses the whole statement. Read in the statement's snapshot: a claim committed while
 * it runs is not seen, and the run's next write finds it (or the claim's run conflicts with this one).
 */
const fenceParts = ({ claims }: Rows) => [
  claims.length > 0 &&
    sql`claims_lost as (
      select run_claim_lost(c.id) as lost
      from unnest(${uncountedIds(claims.map((c) => c.actionId))}, ${claims.map((c) => c.token)}::uuid[]) as c(id, token)
      where not exists (select 1 from actions a where a.id = c.id and a.run_token = c.token)
    )`,
];

const RUN_CLAIM_LOST = 'AP001';
/** The run's claim was taken by another (raised by a write's fence): the run stops, leaving the action to that one. */
export const isRunClaimLost = (error: unknown): boolean => (error as { code?: string } | null)?.code === RUN_CLAIM_LOST;

/** The conversation: threads opened, linked to their actions, and their messages. */
const conversationParts = ({ threads, links, messages }: Rows) => [
  threads.length > 0 &&
    sql`new_threads as (
      insert into threads (id, org_id, user_id, channel, title)
      select id, org_id, user_id, 'webhook', title
      from unnest(${uncountedIds(threads.map((t) => t.id))}, ${threads.map((t) => t.orgId)}::uuid[],
        ${threads.map((t) => t.userId)}::uuid[], ${threads.map((t) => t.title)}::text[]) as t(id, org_id, user_id, title)
    )`,
  links.length > 0 &&
    sql`linked as (
      update actions a set thread_id = l.thread_id
      from unnest(${uncountedIds(links.map((t) => t.actionId))}, ${links.map((t) => t.id)}::uuid[]) as l(id, thread_id)
      where a.id = l.id and a.thread_id is null
      returning a.id
    )`,
  messages.length > 0 &&
    sql`new_messages as (
      insert into thread_messages (id, thread_id, seq, role, content, action_id)
      select * from unnest(${uncountedIds(messages.map((m) => m.id))}, ${messages.map((m) => m.threadId)}::uuid[],
        ${messages.map((m) => m.seq)}::int[], ${messages.map((m) => m.role)}::text[],
        ${messages.map((m) => m.content)}::jsonb[], ${messages.map((m) => m.actionId ?? null)}::uuid[])
    )`,
];

/** Tool calls proposed, the model calls made, and calls started or finished. */
const callParts = ({ calls, usage, started, finished }: Rows) => [
  calls.length > 0 &&
    sql`new_calls as (
      insert into tool_calls (id, org_id, action_id, tool_call_id, tool_name, position, input, mode, status, approval, output,
        requested_at, expires_at, completed_at, mode_source, started_at, staged_reason)
      select * from unnest(${uncountedIds(calls.map((c) => c.id))}, ${calls.map((c) => c.orgId)}::uuid[],
        ${calls.map((c) => c.actionId)}::uuid[], ${calls.map((c) => c.toolCallId)}::text[],
          ${calls.map((c) => c.toolName)}::text[], ${calls.map((c) => c.position)}::int[],
        ${calls.map((c) => c.input ?? null)}::jsonb[], ${calls.map((c) => c.mode)}::text[], ${calls.map((c) => c.status)}::text[],
        ${calls.map((c) => c.approval)}::text[], ${calls.map((c) => c.output ?? null)}::jsonb[],
        ${calls.map((c) => c.requestedAt ?? null)}::timestamptz[], ${calls.map((c) => c.expiresAt ?? null)}::timestamptz[],
        ${calls.map((c) => c.completedAt ?? null)}::timestamptz[], ${calls.map((c) => c.modeSource ?? null)}::jsonb[],
        ${calls.map((c) => c.startedAt ?? null)}::timestamptz[], ${calls.map((c) => c.stagedReason ?? null)}::text[])
    )`,
  usage.length > 0 &&
    sql`new_model_calls as (
      insert into model_calls (id, org_id, action_id, agent_id, user_id, provider, model, input_tokens, output_tokens,
        cached_input_tokens, cost_usd, duration_ms, created_at)
      select * from unnest(${uncountedIds(usage.map((u) => u.id))}, ${usage.map((u) => u.orgId)}::uuid[],
        ${usage.map((u) => u.actionId ?? null)}::uuid[], ${usage.map((u) => u.agentId ?? null)}::uuid[],
        ${usage.map((u) => u.userId ?? null)}::uuid[], ${usage.map((u) => u.provider)}::text[],
          ${usage.map((u) => u.model)}::text[],
        ${usage.map((u) => u.inputTokens)}::int[], ${usage.map((u) => u.outputTokens)}::int[],
        ${usage.map((u) => u.cachedInputTokens)}::int[], ${usage.map((u) => u.costUsd ?? null)}::float8[],
        ${usage.map((u) => u.durationMs)}::int[], ${usage.map((u) => u.createdAt)}::timestamptz[])
    )`,
  started.length > 0 &&
    sql`started_calls as (
      update tool_calls c set started_at = s.started_at
      from unnest(${uncountedIds(started.map((s) => s.id))}, ${started.map((s) => s.startedAt)}::timestamptz[])
        as s(id, started_at)
      where c.id = s.id and c.status = 'ready'
    )`,
  finished.length > 0 &&
    sql`finished_calls as (
      update tool_calls c set status = f.status, output = f.output, completed_at = f.completed_at
      from unnest(${uncountedIds(finished.map((f) => f.id))}, ${finished.map((f) => f.status)}::text[],
        ${finished.map((f) => json(f.output))}::jsonb[], ${finished.map((f) => f.completedAt)}::timestamptz[])
        as f(id, status, output, completed_at)
      where c.id = f.id and c.status = 'ready'
    )`,
];

/** Lifecycle transitions, their ledger events and the callbacks that announce them. */
const transitionParts = ({ steps }: Rows) => [
  steps.length > 0 &&
    sql`step as (
      select * from unnest(${uncountedIds(steps.map((s) => s.actionId))}, ${steps.map((s) => s.from)}::text[],
        ${steps.map((s) => s.to)}::text[], ${steps.map((s) => approvalStateOf(s) ?? null)}::text[],
        ${steps.map((s) => s.changes?.result !== undefined)}::bool[], ${steps.map((s) => s.changes?.result ?? null)}::jsonb[],
        ${steps.map((s) => s.changes?.error !== undefined)}::bool[], ${steps.map((s) => s.changes?.error ?? null)}::text[],
        ${steps.map((s) => s.changes?.leaseExpiresAt !== undefined)}::bool[],
        ${steps.map((s) => s.changes?.leaseExpiresAt ?? null)}::timestamptz[], ${steps.map((s) => s.threadId)}::uuid[],
        ${steps.map((s) => s.cause)}::text[], ${steps.map((s) => json(s.data))}::jsonb[],
        ${steps.map((s) => CALLBACK_EVENT_OF[s.to] ?? null)}::text[],
        ${steps.map((s) => JSON.stringify(callbackDetails(s.to, s.data, s.changes ?? {})))}::jsonb[])
        as s(id, from_status, to_status, approval_state, set_result, result, set_error, error, set_lease, lease_expires_at,
          thread_id, cause, data, event, details)
    ), moved as (
      update actions a set status = s.to_status, updated_at = now(),
        approval_state = coalesce(s.approval_state, a.approval_state),
        result = case when s.set_result then s.result else a.result end,
        error = case when s.set_error then s.error else a.error end,
        lease_expires_at = case when s.set_lease then s.lease_expires_at else a.lease_expires_at end,
        thread_id = coalesce(a.thread_id, s.thread_id)
      from step s where a.id = s.id and a.status = s.from_status
      returning a.id, a.org_id, a.webhook_id, a.delivery_id, a.external_id, a.event_type, a.trace_parent, a.agent_version,
        s.to_status, s.cause, s.data, s.event, s.details
    ), recorded as (
      insert into action_events (id, action_id, org_id, status, cause, data)
      select gen_random_uuid(), id, org_id, to_status, cause, data from moved
    ), ${OUTBOX_CTE}`,
];

/**
 * Moves an action from `from` to `to`, records the lifecycle event and writes the callbacks that
 * announce it, in one statement (writeActions). `moved` is false when the action is no longer in
 * `from` (someone else moved it first). When it wrote `callbacks`, the caller signals
 * BUS_TOPICS.callbacks once it has committed, so that they go out now, not at the next poll.
 */
export async function transition(db: Kysely<DB>, step: Transition): Promise<{ moved: boolean; callbacks: number }> {
  const [written] = await writeActions(db, [{ actionId: step.actionId, transition: step }]);
  return { moved: written!.moved, callbacks: written!.callbacks };
}

export function messageRow(threadId: string, seq: number, message: Message, actionId: string) {
  return { id: randomUUID(), threadId, seq, role: message.role, content: JSON.stringify(message.content), actionId };
}
