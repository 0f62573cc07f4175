import { createActionRunner } from '../features/actions/action-runner.ts';
import type { ModelTurnDeps } from '../features/actions/model-turn.ts';
import { createRunDispatcher } from '../features/actions/run-dispatcher.ts';
import { createToolPreferencesService } from '../features/actions/tool-preferences.service.ts';
import { createAgentVersionsService } from '../features/agents/agent-versions.service.ts';
import { createAgentsService } from '../features/agents/agents.service.ts';
import { createModelCredentialsService } from '../features/agents/model-credentials.service.ts';
import { createModelResolver } from '../features/agents/model-provider.ts';
import {
  createToolRegistry,
  registerToolModules,
  type ToolDefinition,
  type ToolSource,
} from '../features/agents/tool-registry.ts';
import { createDocumentsService, generateDocumentTool } from '../features/documents/documents.service.ts';
import { createRenderPool } from '../features/documents/render-pool.ts';
import type { Shared } from './shared.ts';
import type { BudgetsService } from '../features/usage/budgets.service.ts';
import { createModelMeter } from '../features/usage/model-meter.ts';

/** Agents and their tools, the runs of actions (metered against the budgets), documents. */
export async function composeAgents(
  shared: Shared,
  deps: {
    userLimits: { take(userId: string): Promise<string | undefined>; giveBack(userId: string): Promise<void> };
    budgets: BudgetsService;
    /** Tools that other parts define (sendEmail). */
    tools: ToolDefinition[];
    /** Each org's own tools (its MCP servers'). */
    toolSources: ToolSource[];
    /** For tool preferences: a tool of this name that is not built in is one of the user's orgs'. */
    offeredToMember: (userId: string, toolName: string) => Promise<boolean>;
  },
) {
  const { config, database, db, clock, logger, metrics, box, bus, jobs, announce, wakeRunners } = shared;
  const renderPool = createRenderPool({ threads: config.documents.renderThreads, timeoutMs: config.documents.renderTimeoutMs });
  const documents = createDocumentsService({ db, renderer: renderPool });
  // Every tool is registered before the server takes a request.
  const tools = createToolRegistry();
  tools.register(generateDocumentTool(documents));
  for (const tool of deps.tools) tools.register(tool);
  await registerToolModules(tools, config.toolModules);
  for (const source of deps.toolSources) tools.addSource(source);
  const { budgets } = deps;
  // What a model step needs, for live runs and experiments' replays alike.
  const modelTurn: ModelTurnDeps = {
    tracing: shared.tracing,
    clock,
    meter: createModelMeter({ budgets, userLimits: deps.userLimits, prices: config.model.prices }),
    resolveModel: createModelResolver({ box, defaults: config.model }),
    defaultProvider: config.model.provider,
    limits: {
      maxSteps: config.actions.maxSteps,
      modelTimeoutMs: config.model.timeoutMs,
      modelMaxRetries: config.model.maxRetries,
    },
  };
  const runner = createActionRunner({
    ...modelTurn,
    db,
    jobs,
    wakeRunners,
    tools,
    logger,
    announce,
    leaseMs: config.actions.leaseMs,
    writeConcurrency: database.kind === 'pglite' ? 1 : config.ingestWriteConcurrency,
  });
  const runDispatcher = createRunDispatcher({
    db,
    runner,
    concurrency: config.actions.concurrency,
    leaseMs: config.actions.leaseMs,
    pollMs: config.jobs.pollMs,
    metrics,
    logger,
  });
  const services = {
    agents: createAgentsService({ db, bus, tools, budgets }),
    agentVersions: createAgentVersionsService({ db, tools }),
    documents,
    runner,
    toolPreferences: createToolPreferencesService({
      db,
      knownTool: async (userId, toolName) => tools.has(toolName) || deps.offeredToMember(userId, toolName),
    }),
    modelCredentials: createModelCredentialsService({ db, box }),
  };
  return { services, tools, runner, runDispatcher, renderPool, modelTurn };
}
