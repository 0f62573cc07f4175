import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { JobRunner } from '../../jobs/job-runner.ts';
import type { Clock } from '../../lib/clock.ts';
import type { ToolContext } from '../agents/tool-registry.ts';
import type { MeterAdmission } from '../usage/model-meter.ts';
import type { ActionWrite } from './action-writes.ts';
import { pauseForBudget } from './budget-hold.ts';
import { ActionFailure, type Call, type Run } from './run-context.ts';
import type { RunWriter } from './run-writer.ts';
import { runToolCall } from './tool-execution.ts';

export type BudgetRefusal = Extract<MeterAdmission, { kind: 'refused' }>;
export interface ToolOutcome {
  status: 'completed' | 'failed';
  output: unknown;
}

/**
 * What a run does beyond calling the model, injected into the one run loop (run-loop.ts): a live
 * run stores every step, runs its tools and waits for people; an experiment's replay (experiments/)
 * keeps what it does to itself and runs no tool.
 */
export interface RunEffects {
  store: RunWriter['store'];
  finish: RunWriter['finish'];
  /** Stores a model step some of whose calls wait for a person. */
  hold(run: Run, step: ActionWrite, staged: Call[]): Promise<void>;
  /** A budget refused the run's next model call: the run pauses for a person ('paused'), or throws to end. */
  overBudget(run: Run, refusal: BudgetRefusal): Promise<'paused'>;
  /** Runs one call that may run: its status, and the result the model sees. */
  execute(run: Run, call: Call, context: ToolContext): Promise<ToolOutcome>;
}

/** A live run's effects: steps stored as they happen, tools run, staged calls wait for their deadline, budgets pause or fail. */
export function liveEffects(deps: {
  db: Kysely<DB>;
  clock: Clock;
  jobs: Pick<JobRunner, 'enqueue'>;
  writer: Pick<RunWriter, 'store' | 'finish'>;
  announce: () => void;
}): RunEffects {
  const { db, writer } = deps;
  return {
    store: writer.store,
    finish: writer.finish,
    async hold(run, step, staged) {
      await db.transaction().execute(async (trx) => {
        await writer.store(run, step, trx);
        for (const call of staged)
          await deps.jobs.enqueue('approvals.expire', { toolCallRowId: call.id }, { trx, startAfter: call.expiresAt! });
      });
    },
    async overBudget(run, refusal) {
      if (refusal.onExceed === 'fail') throw new ActionFailure(refusal.reason);
      await pauseForBudget(
        { db, clock: deps.clock, jobs: deps.jobs, store: writer.store, announce: deps.announce },
        run,
        refusal,
      );
      return 'paused';
    },
    execute: (run, call, context) => runToolCall(run.plans.get(call.toolName)?.definition, call, context),
  };
}
