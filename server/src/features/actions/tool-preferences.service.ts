import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import { notFound } from '../../lib/errors.ts';
import { toolPreferencesRepo } from './tool-preferences.repo.ts';

/** A user's own preferences per tool: "always deny" beats every approval mode and override. */
export function createToolPreferencesService(deps: {
  db: Kysely<DB>;
  /** Whether the user may meet a tool of this name: a built-in one, or one of the MCP servers of their orgs. */
  knownTool: (userId: string, toolName: string) => Promise<boolean>;
}) {
  return {
    list: (userId: string) => toolPreferencesRepo.list(deps.db, userId),

    async set(userId: string, toolName: string, preference: 'always_deny' | 'default') {
      if (!(await deps.knownTool(userId, toolName))) throw notFound('Tool');
      if (preference === 'default') {
        await toolPreferencesRepo.remove(deps.db, userId, toolName);
        return { toolName, preference, updatedAt: null };
      }
      return toolPreferencesRepo.upsert(deps.db, userId, toolName, preference);
    },
  };
}

export type ToolPreferencesService = ReturnType<typeof createToolPreferencesService>;
