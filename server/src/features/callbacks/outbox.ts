import { sql, type RawBuilder } from 'kysely';
import type { ActionStatus, CallbackEventType } from '../../db/schema.ts';

/** The callback event an action announces when it enters a status; `running` announces none. */
export const CALLBACK_EVENT_OF: Partial<Record<ActionStatus, CallbackEventType>> = {
  pending_approval: 'action.pending_approval',
  approved: 'action.approved',
  completed: 'action.completed',
  failed: 'action.failed',
  rejected: 'action.rejected',
  expired: 'action.expired',
};

/**
 * The events an action announces last (its terminal statuses'): nothing of its action follows one to
 * its endpoint, so none waits for it to be recorded. actions/lifecycle.test.ts holds it to the lifecycle.
 */
export const LAST_CALLBACK_EVENTS: ReadonlySet<string> = new Set<CallbackEventType>([
  'action.completed',
  'action.failed',
  'action.rejected',
  'action.expired',
]);

interface StagedCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  expiresAt: unknown;
}

/** What a callback adds to the action's identity for each event: the staged call, the decision, the result or the error. */
export function callbackDetails(
  to: ActionStatus,
  data: Record<string, unknown> | undefined,
  changes: { result?: string | null; error?: string | null },
): Record<string, unknown> {
  switch (to) {
    case 'pending_approval': {
      const toolCalls = ((data?.toolCalls ?? []) as StagedCall[]).map(({ toolCallId, toolName, input, expiresAt }) => ({
        toolCallId,
        toolName,
        input,
        expiresAt,
      }));
      // A run paused by a budget says so (`reason: "budget exceeded"`); a staged tool call needs no reason.
      return { toolCall: toolCalls[0] ?? null, toolCalls, ...(typeof data?.reason === 'string' && { reason: data.reason }) };
    }
    case 'approved':
    case 'rejected':
    case 'expired':
      return { decision: data ?? null };
    case 'completed':
      return { result: changes.result ? JSON.parse(changes.result) : null };
    case 'failed':
      return { error: changes.error ?? null };
    default:
      return {};
  }
}

/**
 * The `callbacks` CTE of the transitions statement (actions/action-writes.ts), whose `moved` CTE
 * returns each moved action (id, org_id, webhook_id, delivery_id, external_id, event_type, trace_parent, agent_version) with its
 * new status (to_status), its callback event (event, null for none) and the event's details: one
 * outbox row per enabled endpoint of the action's webhook that subscribes to the event. (Not a
 * NOTIFY in the same statement: it would serialize every such commit in the database, a third of
 * the transition's cost.)
 */
export const OUTBOX_CTE: RawBuilder<unknown> = sql`callbacks as (
      insert into callback_deliveries (id, org_id, endpoint_id, action_id, event_type, trace_parent, payload)
      select gen_random_uuid(), m.org_id, ep.id, m.id, m.event, m.trace_parent, jsonb_build_object(
        'type', m.event,
        'timestamp', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'data', jsonb_build_object(
          'actionId', m.id, 'status', m.to_status, 'webhookId', m.webhook_id, 'webhookIdentifier', w.identifier,
          'eventId', m.delivery_id, 'externalId', m.external_id, 'eventType', m.event_type, 'agentVersion', m.agent_version
        ) || m.details)
      from moved m
      join callback_endpoints ep on ep.webhook_id = m.webhook_id and ep.enabled and ep.events @> jsonb_build_array(m.event)
      join webhooks w on w.id = m.webhook_id
      where m.event is not null
      returning action_id
    )`;
