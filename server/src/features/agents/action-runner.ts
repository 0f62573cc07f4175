import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import type { Insertable, Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { ActionStatus, DB, ThreadMessageRow, ToolCallsTable } from '../../db/schema.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { actionsRepo } from '../actions/actions.repo.ts';
import { decisionData } from '../actions/approvals.service.ts';
import { transition } from '../actions/lifecycle.ts';
import { toolCallsRepo } from '../actions/tool-calls.repo.ts';
import { threadsRepo } from '../threads/threads.repo.ts';
import { agentModePolicy, readApprovalDecision, resolveToolMode } from './approval-policy.ts';
import { ModelUnavailableError, type ModelResolver } from './model-provider.ts';
import { callModel, ModelCallError, modelTools, type ProposedCall, type ToolPlan } from './model-step.ts';
import type { ToolRegistry } from './tool-registry.ts';
import { executeToolCall } from './tool-execution.ts';

type RunContext = NonNullable<Awaited<ReturnType<typeof actionsRepo.runContext>>>;

/** A reason the action fails, shown in the ledger as its error. */
class ActionFailure extends Error {}

const DENIED_BY_PREFERENCE = { type: 'execution-denied', reason: 'The user has chosen to always deny this tool; it was not run.' };

/**
 * Runs actions with their agent, one model step at a time. Each step and each tool result is stored
 * before the next step, so a run killed anywhere resumes from the database: the conversation says
 * where it was, and a tool call stored as finished is never run again. One runner holds an action at a
 * time (a lease it renews); another may take over only once the lease has lapsed.
 */
export function createActionRunner(deps: {
  db: Kysely<DB>;
  jobs: Pick<JobRunner, 'enqueue' | 'notify'>;
  tools: ToolRegistry;
  resolveModel: ModelResolver;
  limits: { maxSteps: number; leaseMs: number; modelTimeoutMs: number; modelMaxRetries: number };
  logger: Logger;
}) {
  const { db } = deps;

  /** Takes the action if it is waiting to run, or running under a lapsed lease (its runner died). */
  async function claim(actionId: string): Promise<boolean> {
    return db.transaction().execute(async (trx) => {
      const action = await actionsRepo.lock(trx, actionId);
      if (!action) return false;
      const now = new Date();
      const leaseExpiresAt = new Date(now.getTime() + deps.limits.leaseMs);
      if (action.status === 'queued' || action.status === 'approved') {
        const cause = action.status === 'queued' ? 'picked up by a worker' : 'resumed after approval';
        return transition(trx, { actionId, from: action.status, to: 'running', cause, changes: { leaseExpiresAt } });
      }
      if (action.status === 'running' && (action.leaseExpiresAt === null || action.leaseExpiresAt <= now)) {
        await trx.updateTable('actions').set({ leaseExpiresAt }).where('id', '=', actionId).execute();
        deps.logger.warn({ actionId }, 'resuming an action whose runner stopped');
        return true;
      }
      return false;
    });
  }

  async function finish(actionId: string, to: Extract<ActionStatus, 'completed' | 'failed'>, outcome: { result?: unknown; error?: string }) {
    await db.transaction().execute((trx) =>
      transition(trx, {
        actionId, from: 'running', to,
        cause: to === 'completed' ? 'the agent finished' : outcome.error!,
        changes: { result: outcome.result === undefined ? null : JSON.stringify(outcome.result), error: outcome.error ?? null, leaseExpiresAt: null },
      }),
    );
  }

  async function planTools(context: RunContext): Promise<Map<string, ToolPlan>> {
    const denied = new Set(
      (await db.selectFrom('userToolPreferences').select('toolName').where('userId', '=', context.runAsUserId!).where('preference', '=', 'always_deny').execute())
        .map((row) => row.toolName),
    );
    const plans = new Map<string, ToolPlan>();
    for (const name of context.tools ?? []) {
      const definition = deps.tools.get(name);
      if (!definition) continue; // a tool this build does not have
      plans.set(name, {
        definition,
        mode: resolveToolMode({
          toolName: name, ruleDefaults: context.approvalRules ?? {}, requestOverrides: context.toolApprovals,
          allowOverrides: context.allowRequestOverrides === true, alwaysDeny: denied.has(name),
        }),
      });
    }
    return plans;
  }

  function instructionsOf(context: RunContext, plans: Map<string, ToolPlan>): string {
    const agentModeTools = [...plans].filter(([, plan]) => plan.mode === 'agent').map(([name]) => name);
    return [context.agentInstructions, context.ruleInstructions, agentModeTools.length > 0 ? agentModePolicy(agentModeTools) : '']
      .map((part) => part?.trim()).filter(Boolean).join('\n\n');
  }

  /** The first message: the request's own instructions and the event as context. */
  function eventMessage(context: RunContext): { role: 'user'; content: string } {
    const lines = [];
    if (context.instructions?.trim()) lines.push(`Instructions for this event:\n${context.instructions.trim()}`, '');
    lines.push(`Event type: ${context.eventType}`);
    if (context.externalId) lines.push(`External id: ${context.externalId}`);
    lines.push('Event data (JSON):', JSON.stringify(context.data ?? {}, null, 2));
    return { role: 'user', content: lines.join('\n') };
  }

  async function openThread(context: RunContext): Promise<string> {
    if (context.threadId) return context.threadId;
    const threadId = randomUUID();
    await db.transaction().execute(async (trx) => {
      await threadsRepo.insert(trx, {
        id: threadId, orgId: context.orgId, userId: context.runAsUserId!, channel: 'webhook',
        title: `${context.eventType}${context.externalId ? ` (${context.externalId})` : ''}`.slice(0, 200),
      });
      await threadsRepo.appendMessages(trx, threadId, 0, [eventMessage(context)], context.id);
      await actionsRepo.setThread(trx, context.id, threadId);
    });
    return threadId;
  }

  /** The stored row of each call the model proposed: its mode decides whether it runs, waits or is refused. */
  function toolCallRow(context: RunContext, plans: Map<string, ToolPlan>, call: ProposedCall, now: Date): Insertable<ToolCallsTable> {
    const base = { id: randomUUID(), orgId: context.orgId, actionId: context.id, toolCallId: call.toolCallId, toolName: call.toolName, requestedAt: now };
    const plan = plans.get(call.toolName);
    const input = JSON.stringify(call.input ?? null);
    if (!plan) {
      const output = { type: 'error-text', value: `There is no tool named "${call.toolName}" available to you.` };
      return { ...base, input, mode: 'allow', status: 'failed', approval: 'not_required', output: JSON.stringify(output), completedAt: now };
    }
    if (plan.mode === 'deny') return { ...base, input, mode: 'deny', status: 'denied', approval: 'not_required', output: JSON.stringify(DENIED_BY_PREFERENCE), completedAt: now };
    const staged = { status: 'staged' as const, approval: 'pending' as const, expiresAt: new Date(now.getTime() + (context.approvalTimeoutSeconds ?? 86_400) * 1000) };
    if (plan.mode === 'allow') return { ...base, input, mode: 'allow', status: 'ready', approval: 'not_required' };
    if (plan.mode === 'ask') return { ...base, input, mode: 'ask', ...staged };
    // agent: fail-closed; a malformed call keeps its raw input for the human to judge.
    const decision = call.invalid ? { runNow: false, input: call.input } : readApprovalDecision(call.input);
    const decided = JSON.stringify(decision.input ?? null);
    return decision.runNow ? { ...base, input: decided, mode: 'agent', status: 'ready', approval: 'not_required' } : { ...base, input: decided, mode: 'agent', ...staged };
  }

  async function takeModelStep(context: RunContext, threadId: string, messages: ThreadMessageRow[], plans: Map<string, ToolPlan>, signal: AbortSignal) {
    const steps = messages.filter((message) => message.role === 'assistant').length;
    if (steps >= deps.limits.maxSteps) throw new ActionFailure(`The action reached its limit of ${deps.limits.maxSteps} model steps`);
    const model = await deps.resolveModel(context.orgId, { provider: context.provider, model: context.model });
    const step = await callModel({
      model, instructions: instructionsOf(context, plans), tools: modelTools(plans), timeoutMs: deps.limits.modelTimeoutMs, maxRetries: deps.limits.modelMaxRetries, signal,
      messages: messages.map((message) => ({ role: message.role, content: message.content }) as ModelMessage),
    });
    const now = new Date();
    const rows = step.calls.map((call) => toolCallRow(context, plans, call, now));
    await db.transaction().execute(async (trx) => {
      await threadsRepo.appendMessages(trx, threadId, messages.length, [step.assistant], context.id);
      await toolCallsRepo.insertMany(trx, rows);
      for (const row of rows) if (row.status === 'staged') await deps.jobs.enqueue('approvals.expire', { toolCallRowId: row.id }, { trx, startAfter: row.expiresAt! });
    });
  }

  /**
   * Runs the calls of the last step that may run, then looks, with the action locked against
   * deciders, at what is left: a rejection or expiry ends the action, a staged call pauses it, and
   * when every call has its result the conversation goes on.
   */
  async function settleToolCalls(context: RunContext, threadId: string, seq: number, toolCallIds: string[], signal: AbortSignal): Promise<'continue' | 'stop'> {
    for (;;) {
      const rows = (await toolCallsRepo.forAction(db, context.id)).filter((row) => toolCallIds.includes(row.toolCallId));
      for (const row of rows.filter((candidate) => candidate.status === 'ready')) {
        await executeToolCall({ db, tools: deps.tools, row, context: { orgId: context.orgId, actionId: context.id, userId: context.runAsUserId!, toolCallId: row.toolCallId, signal } });
      }
      const verdict = await db.transaction().execute(async (trx) => {
        await actionsRepo.lock(trx, context.id);
        const current = (await toolCallsRepo.forAction(trx, context.id)).filter((row) => toolCallIds.includes(row.toolCallId));
        const ended = current.find((row) => row.status === 'rejected' || row.status === 'expired');
        if (ended) {
          await toolCallsRepo.cancelStaged(trx, context.id, new Date());
          await transition(trx, { actionId: context.id, from: 'running', to: ended.status as 'rejected' | 'expired', cause: `tool call ${ended.toolName} ${ended.status}`, data: decisionData(ended), changes: { leaseExpiresAt: null } });
          return 'stop' as const;
        }
        if (current.some((row) => row.status === 'ready')) return 'again' as const;
        const staged = current.filter((row) => row.status === 'staged');
        if (staged.length > 0) {
          await transition(trx, {
            actionId: context.id, from: 'running', to: 'pending_approval', cause: `${staged.map((row) => row.toolName).join(', ')} needs approval`,
            data: { toolCalls: staged.map((row) => ({ toolCallId: row.toolCallId, toolName: row.toolName, input: row.input, mode: row.mode, expiresAt: row.expiresAt })) },
            changes: { leaseExpiresAt: null },
          });
          return 'stop' as const;
        }
        const byId = new Map(current.map((row) => [row.toolCallId, row]));
        const results = toolCallIds.map((id) => ({ type: 'tool-result', toolCallId: id, toolName: byId.get(id)!.toolName, output: byId.get(id)!.output }));
        await threadsRepo.appendMessages(trx, threadId, seq, [{ role: 'tool', content: results }], context.id);
        return 'continue' as const;
      });
      if (verdict !== 'again') return verdict;
    }
  }

  async function drive(actionId: string, signal: AbortSignal): Promise<void> {
    const context = await actionsRepo.runContext(db, actionId);
    if (!context) return;
    if (!context.agentId) throw new ActionFailure('The action has no agent: set one on its action rule or webhook');
    if (!context.runAsUserId) throw new ActionFailure('The run-as user of the action no longer exists');
    const plans = await planTools(context);
    const threadId = await openThread(context);
    for (;;) {
      const messages = await threadsRepo.messages(db, threadId);
      const last = messages.at(-1)!;
      if (last.role !== 'assistant') {
        await takeModelStep(context, threadId, messages, plans, signal);
        continue;
      }
      const parts = (last.content as Array<{ type: string; toolCallId?: string; text?: string }>);
      const toolCallIds = parts.filter((part) => part.type === 'tool-call').map((part) => part.toolCallId!);
      if (toolCallIds.length === 0) {
        const text = parts.filter((part) => part.type === 'text').map((part) => part.text).join('');
        await threadsRepo.touch(db, threadId);
        return finish(actionId, 'completed', { result: { text } });
      }
      if ((await settleToolCalls(context, threadId, messages.length, toolCallIds, signal)) === 'stop') return;
    }
  }

  return {
    /** Runs the action until it completes, fails, or waits for a human. Safe to call for any action in any state. */
    async run(actionId: string): Promise<void> {
      if (!(await claim(actionId))) return;
      const controller = new AbortController();
      const renew = setInterval(() => {
        actionsRepo.setLease(db, actionId, new Date(Date.now() + deps.limits.leaseMs)).catch((error) => deps.logger.warn({ err: error, actionId }, 'could not renew an action lease'));
      }, Math.max(100, deps.limits.leaseMs / 3));
      renew.unref();
      try {
        await drive(actionId, controller.signal);
      } catch (error) {
        if (isUniqueViolation(error)) {
          deps.logger.warn({ actionId }, 'another runner continued this action; stopping');
          return;
        }
        const known = error instanceof ActionFailure || error instanceof ModelCallError || error instanceof ModelUnavailableError;
        if (!known) deps.logger.error({ err: error, actionId }, 'action run failed unexpectedly');
        const message = known ? (error as Error).message : `Internal error while running the action: ${error instanceof Error ? error.message : String(error)}`;
        try {
          await finish(actionId, 'failed', { error: message });
        } catch (failError) {
          // The database is unreachable: let the lease lapse so that the action resumes later.
          deps.logger.error({ err: failError, actionId }, 'could not record the failure of an action');
          throw error;
        }
      } finally {
        clearInterval(renew);
        controller.abort();
      }
    },

    /** Schedules every action whose runner died to resume once its lease has lapsed. */
    async resumeAbandoned(options: { includeLive: boolean }): Promise<number> {
      const rows = options.includeLive ? await actionsRepo.running(db) : await actionsRepo.abandoned(db, new Date());
      for (const row of rows) {
        const startAfter = row.leaseExpiresAt && row.leaseExpiresAt > new Date() ? new Date(row.leaseExpiresAt.getTime() + 50) : undefined;
        await deps.jobs.enqueue('actions.run', { actionId: row.id }, { startAfter });
      }
      return rows.length;
    },
  };
}

export type ActionRunner = ReturnType<typeof createActionRunner>;
