import { z } from 'zod';
import { defineTool } from '../../server/src/features/agents/tool-registry.ts';

/** The benchmark's tool (loaded through TOOL_MODULES): costs nothing itself, so the run's own overhead shows. */
export const tools = [
  defineTool({
    name: 'echo',
    description: 'Returns its input.',
    inputSchema: z.object({ text: z.string() }),
    execute: async (input) => ({ echoed: input.text }),
  }),
];
