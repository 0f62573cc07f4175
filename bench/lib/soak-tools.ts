import pg from 'pg';
import { z } from 'zod';
import { defineTool } from '../../server/src/features/agents/tool-registry.ts';

/**
 * The soak's tools (loaded through TOOL_MODULES): each records its side effect in `soak_effects`,
 * idempotently by tool call id as the tool contract asks, and counts how often it was executed.
 * The soak then checks that no action's effect happened under two tool calls.
 */
let pool: pg.Pool | undefined;
const effects = () => {
  pool ??= new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
  return pool;
};

const record = (tool: string) =>
  defineTool({
    name: tool,
    description: tool === 'soak_transfer' ? 'Moves money (needs approval).' : 'Records an order.',
    inputSchema: z.object({ key: z.string().max(100) }),
    execute: async (input, context) => {
      await effects().query(
        `insert into soak_effects (tool_call_id, action_id, tool, key) values ($1, $2, $3, $4)
         on conflict (tool_call_id) do update set executions = soak_effects.executions + 1`,
        [context.toolCallId, context.actionId, tool, input.key],
      );
      return { recorded: input.key };
    },
  });

export const tools = [record('soak_record'), record('soak_transfer')];

export const SOAK_EFFECTS_TABLE = `create table soak_effects (
  tool_call_id text primary key,
  action_id uuid not null,
  tool text not null,
  key text not null,
  executions int not null default 1
)`;
