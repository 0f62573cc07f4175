import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import type { Span } from '../../lib/tracing.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import { isRunClaimLost } from './action-writes.ts';
import { actionsRepo } from './actions.repo.ts';
import { toolCallsRepo } from './tool-calls.repo.ts';
import { ModelUnavailableError } from '../agents/model-provider.ts';
import { ModelCallError } from './model-step.ts';
import type { ModelTurnDeps } from './model-turn.ts';
import { startRunSpans } from './run-tracing.ts';
import { createRunWriter, RunSuperseded } from './run-writer.ts';
import { createRunLoop } from './run-loop.ts';
import { liveEffects } from './run-effects.ts';
import type { ToolRegistry } from '../agents/tool-registry.ts';
import { ActionFailure, type Run, type RunContext } from './run-context.ts';
import type { ClaimedRun } from './lifecycle.ts';
import { storableText } from '../../lib/json-input.ts';

/**
 * Runs actions with their agent, one model step at a time. Each step and each tool result is stored
 * before the next step, so a run killed anywhere resumes from the database: the conversation says
 * where it was, and a tool call stored as finished is never run again. One runner holds an action at a
 * time (a lease it renews); another may take over only once the lease has lapsed. Every write is one
 * statement (action-writes.ts), group-committed with the writes of the other runs ready at the same
 * moment, except where a decision can race with the runner (staged calls): that transaction locks
 * the action. The conversation is opened with the first step (a model call before it has no effect).
 */
export function createActionRunner(
  deps: ModelTurnDeps & {
    db: Kysely<DB>;
    jobs: Pick<JobRunner, 'enqueue'>;
    /** Runnable actions were committed (or a lease given up): the run dispatchers of every process claim now. */
    wakeRunners: () => void;
    tools: ToolRegistry;
    /** How long a run holds its action without renewing (a dead process's actions are taken over after it). */
    leaseMs: number;
    /** Write statements at once; the steps of runs that arrive meanwhile are written together. */
    writeConcurrency: number;
    /** Called once a transition has committed: its callbacks go out now. */
    announce: () => void;
    logger: Logger;
  },
) {
  const { db } = deps;
  /** Aborted when the process stops: runs hand their action over at the next safe point. */
  const stopping = new AbortController();
  const writer = createRunWriter({ db, writeConcurrency: deps.writeConcurrency, announce: deps.announce });
  const { finish, drain } = writer;
  const { begin, drive } = createRunLoop({
    ...deps,
    effects: liveEffects({ db, clock: deps.clock, jobs: deps.jobs, writer, announce: deps.announce }),
    stopping: stopping.signal,
  });

  /** Gives up the lease, so that a worker of another process claims the action at once (woken now). */
  async function handOver({ id: actionId, runToken }: ClaimedContext): Promise<void> {
    await actionsRepo.releaseLease(db, actionId, runToken);
    deps.wakeRunners();
    deps.logger.info({ actionId }, 'the process is stopping: action handed over to another worker');
  }

  /** Another claim took the action since this one (a runner stalled past its lease is taken over). */
  async function claimedElsewhere({ id, runToken }: ClaimedContext): Promise<boolean> {
    return (await actionsRepo.runToken(db, id)) !== runToken;
  }

  /**
   * Renews the claim's lease every third of it while the run goes on; a renewal that finds another
   * claim's token aborts the run there (its model call or tool), not at its next write.
   */
  function renewWhileRunning(context: ClaimedContext, controller: AbortController): NodeJS.Timeout {
    const renew = setInterval(
      () => {
        actionsRepo
          .renewLease(db, context.id, context.runToken, deps.leaseMs)
          .then(async (renewed) => {
            if (!renewed && (await claimedElsewhere(context))) controller.abort(CLAIMED_ELSEWHERE);
          })
          .catch((error) => deps.logger.warn({ err: error, actionId: context.id }, 'could not renew an action lease'));
      },
      Math.max(100, deps.leaseMs / 3),
    );
    renew.unref();
    return renew;
  }

  /** `afterConflict`: the run resumed within the same claim after one of its writes conflicted (see the catch). */
  async function runClaimed(context: ClaimedContext, afterConflict: boolean): Promise<void> {
    const actionId = context.id;
    if (context.takeovers > MAX_TAKEOVERS) {
      const error =
        `The action's run was cut short ${context.takeovers} times (its worker process died while running it each ` +
        `time); it is not run again`;
      await finishFenced(context, () => finish(actionId, 'failed', { error }, undefined, { runToken: context.runToken }));
      return;
    }
    const controller = new AbortController();
    const renew = renewWhileRunning(context, controller);
    let run: Run | undefined;
    let span: Span | undefined;
    let resume = false;
    try {
      // A resumed run reads its calls back (and the decisions it resumes after, for its trace).
      const calls = context.threadId ? await toolCallsRepo.forAction(db, actionId) : null;
      span = startRunSpans(deps.tracing, context, calls, deps.clock.now());
      run = await begin(context, controller.signal, span, calls);
      await drive(run);
    } catch (error) {
      if (span) deps.tracing.fail(span, error);
      // A write refused by its claim's fence, or one that conflicts: another runner's, which claimed the
      // action since (it runs it now), or this run's own fault.
      const conflict = isUniqueViolation(error) || error instanceof RunSuperseded;
      const elsewhere = controller.signal.reason === CLAIMED_ELSEWHERE || isRunClaimLost(error);
      if (elsewhere || (conflict && (await claimedElsewhere(context)))) {
        yieldToOtherClaim(actionId);
        return;
      }
      if (stopping.signal.aborted) {
        // Whatever failed here may be the stop's own abort: the action is not failed but continued elsewhere.
        await handOver(context);
        return;
      }
      // Still this claim's: the row may be a stalled runner's, written before it learned of this claim.
      // The run resumes once from what is stored; a conflict again is its own fault, which resuming repeats.
      if (conflict && !afterConflict) {
        deps.logger.warn({ actionId }, 'a write of the run conflicted with a stored row; resuming from what is stored');
        resume = true;
      } else await failRun(context, run, error, conflict);
    } finally {
      span?.end();
      clearInterval(renew);
      controller.abort(RUN_ENDED);
    }
    if (!resume) return;
    const [stored] = await actionsRepo.runContexts(db, [actionId], deps.defaultProvider);
    if (stored?.status === 'running') await runClaimed({ ...stored, runToken: context.runToken }, true);
  }

  /**
   * Ends the action unless another claim took it meanwhile (the write, fenced by this claim's token, is
   * refused whole): that claim's runner goes on with it.
   */
  async function finishFenced(context: ClaimedContext, write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (error) {
      if (!isRunClaimLost(error)) throw error;
      yieldToOtherClaim(context.id);
    }
  }

  /** This run stops without a word on the action: the claim that took it since goes on with it. */
  function yieldToOtherClaim(actionId: string): void {
    deps.logger.warn({ actionId }, 'another runner continued this action; stopping');
  }

  /** Fails the action with the run's error; after a conflict, without the run's pending opening of the conversation. */
  async function failRun(context: ClaimedContext, run: Run | undefined, error: unknown, conflict: boolean): Promise<void> {
    const known = error instanceof ActionFailure || error instanceof ModelCallError || error instanceof ModelUnavailableError;
    if (!known) deps.logger.error({ err: error, actionId: context.id }, 'action run failed unexpectedly');
    const message = known
      ? (error as Error).message
      : `Internal error while running the action: ${error instanceof Error ? error.message : String(error)}`;
    // Fenced even without the run (it failed to begin, or its opening conflicted).
    const step = { ...unsettledCall(run, message, deps.clock.now()), runToken: context.runToken };
    try {
      await finishFenced(context, () => finish(context.id, 'failed', { error: message }, conflict ? undefined : run, step));
    } catch (failError) {
      // The database is unreachable: let the lease lapse so that the action resumes later.
      deps.logger.error({ err: failError, actionId: context.id }, 'could not record the failure of an action');
      throw error;
    }
  }

  return {
    /**
     * The process is stopping: every run stops at its next safe point (a model call is abandoned,
     * a tool call finishes and is stored) and hands its action over.
     */
    stop(): void {
      stopping.abort();
    },

    /** Resolves once every step written so far is committed (shutdown waits for it before closing the database). */
    drain,

    /** What the runs of these claimed actions need, in one read, with their claims' tokens (a deleted action is missing). */
    async contexts(claims: ClaimedRun[]): Promise<Map<string, ClaimedContext>> {
      const ids = claims.map((claim) => claim.id);
      const rows = ids.length === 0 ? [] : await actionsRepo.runContexts(db, ids, deps.defaultProvider);
      const tokens = new Map(claims.map((claim) => [claim.id, claim.runToken]));
      return new Map(rows.map((row) => [row.id, { ...row, runToken: tokens.get(row.id)! }]));
    },

    /**
     * Runs an action this process claimed (claimRunnable) until it completes, fails, or waits for a
     * human, renewing the lease meanwhile.
     */
    runClaimed: (context: ClaimedContext) => runClaimed(context, false),
  };
}

/**
 * Why what still listens to an ended run's signal is aborted: one reason for every run (a DOMException
 * made per run cost its stack trace each time).
 */
const RUN_ENDED = new DOMException('The action run ended', 'AbortError');
/** Why a run is aborted when its renewal finds that another claim took its action. */
const CLAIMED_ELSEWHERE = new DOMException('Another runner claimed the action', 'AbortError');

export type ActionRunner = ReturnType<typeof createActionRunner>;

/**
 * A call whose request may have left when the run failed is recorded as failed with words that say
 * it may have been done: never left as if it had not run (`ready`, no result).
 */
function unsettledCall(run: Run | undefined, failure: string, now: Date) {
  const call = run?.unsettled;
  if (!call) return undefined;
  const value = storableText(
    `The run failed after this call was sent, before its result was stored (${failure}); it may or may not have been done`,
  );
  return { finishedCall: { id: call.id, status: 'failed' as const, output: { type: 'error-text', value }, completedAt: now } };
}

/** A claimed action's run context, with the token of the claim (actions.run_token while no other claim took it). */
export type ClaimedContext = RunContext & { runToken: string };

/** Takeovers of an action's run (its runner died each time) after which it is failed, not run again. */
export const MAX_TAKEOVERS = 5;
