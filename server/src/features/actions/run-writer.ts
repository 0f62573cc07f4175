import type { Insertable, Kysely } from 'kysely';
import type { ActionStatus, DB, ThreadMessagesTable } from '../../db/schema.ts';
import { createGroupCommit } from '../../lib/group-commit.ts';
import { writeActions, type ActionWrite, type ActionWriteResult } from './action-writes.ts';
import type { Run } from './run-context.ts';

/**
 * The action runner's writes. The steps of concurrent runs are group-committed: one statement
 * (writeActions) for all the writes ready at once, at most `writeConcurrency` statements at a time.
 */
export function createRunWriter(deps: {
  db: Kysely<DB>;
  writeConcurrency: number;
  /** Called once a transition that wrote callbacks has committed: they go out now. */
  announce: () => void;
}) {
  const commits = createGroupCommit<ActionWrite, ActionWriteResult>({
    maxInFlight: deps.writeConcurrency,
    maxBatch: 100,
    writeBatch: (writes) => writeActions(deps.db, writes),
    writeAlone: async (write) => (await writeActions(deps.db, [write]))[0]!,
  });

  /**
   * Stores a write of the run (in `trx`, or group-committed with other runs' writes), fenced by its
   * claim's token; the first one opens the conversation too. A conversation another runner opened
   * first means this run is not the action's runner any more (RunSuperseded).
   */
  async function store(run: Run | undefined, write: ActionWrite, trx?: Kysely<DB>): Promise<ActionWriteResult> {
    const opening = run?.opening;
    const claimed = run?.context.runToken ? { ...write, runToken: run.context.runToken } : write;
    const full = opening
      ? { ...claimed, thread: opening.thread, messages: [opening.message, ...(write.messages ?? [])] }
      : claimed;
    const result = trx ? (await writeActions(trx, [full]))[0]! : await commits.write(full);
    if (opening) {
      if (!result.linked) throw new RunSuperseded();
      run.opening = undefined;
    }
    return result;
  }

  return {
    store,

    /** Ends a running action: completed with its result (and the agent's last message), or failed with the reason. */
    async finish(
      actionId: string,
      to: Extract<ActionStatus, 'completed' | 'failed'>,
      outcome: { result?: unknown; error?: string; message?: Insertable<ThreadMessagesTable> },
      run?: Run,
      /**
       * What the last step stores with the end (its model call, a continuation over budget it used), and
       * the claim's token that fences it when there is no run.
       */
      step?: Pick<ActionWrite, 'modelCall' | 'finishedCall' | 'runToken'>,
    ): Promise<void> {
      const { callbacks } = await store(run, {
        ...step,
        actionId,
        transition: {
          actionId,
          from: 'running',
          to,
          cause: to === 'completed' ? 'the agent finished' : outcome.error!,
          changes: {
            result: outcome.result === undefined ? null : JSON.stringify(outcome.result),
            error: outcome.error ?? null,
            leaseExpiresAt: null,
          },
        },
        messages: outcome.message ? [outcome.message] : [],
      });
      if (callbacks > 0) deps.announce();
    },

    /** Resolves once every write taken so far is committed. */
    drain: (): Promise<void> => commits.drain(),
  };
}

/** Another runner opened the action's conversation first: this one is not the action's runner. */
export type RunWriter = ReturnType<typeof createRunWriter>;

export class RunSuperseded extends Error {
  constructor() {
    super('another runner continued this action');
  }
}
