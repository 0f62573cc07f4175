import type { ModelTurnDeps } from '../features/actions/model-turn.ts';
import type { ToolRegistry } from '../features/agents/tool-registry.ts';
import { createExperimentDispatcher } from '../features/experiments/experiment-dispatcher.ts';
import { createExperimentsService } from '../features/experiments/experiments.service.ts';
import { createReplayer } from '../features/experiments/replay.ts';
import { BUS_TOPICS } from '../lib/process-bus.ts';
import type { Shared } from './shared.ts';

/** Experiments: the service behind their routes, and the dispatcher that replays them (on the live runs' model turn). */
export function composeExperiments(shared: Shared, deps: { modelTurn: ModelTurnDeps; tools: ToolRegistry }) {
  const { config, db, bus, logger, metrics } = shared;
  const dispatcher = createExperimentDispatcher({
    db,
    replay: createReplayer({ ...deps.modelTurn, db, tools: deps.tools }),
    concurrency: config.experiments.concurrency,
    leaseMs: config.actions.leaseMs,
    pollMs: config.jobs.pollMs,
    ended: (experimentId) => bus.publish(BUS_TOPICS.experimentEnded, experimentId),
    metrics,
    logger,
  });
  bus.subscribe(BUS_TOPICS.experiments, () => dispatcher.wake());
  bus.subscribe(BUS_TOPICS.experimentEnded, () => {
    dispatcher.experimentEnded().catch((error) => logger.warn({ err: error }, 'could not look for ended experiments'));
  });
  return { experiments: createExperimentsService({ db, bus }), dispatcher };
}
