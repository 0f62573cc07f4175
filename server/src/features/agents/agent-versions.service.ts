import { diffLines } from 'diff';
import type { Kysely } from 'kysely';
import type { z } from 'zod';
import type { DB } from '../../db/schema.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { decodeCursor, decodeNumberCursor, encodeNumberCursor, toPage } from '../../lib/pagination.ts';
import { behaviourOf, changedFields, nextVersion, publish, requireKnownTools } from './agent-behaviour.ts';
import { agentVersionsRepo, type VersionRow } from './agent-versions.repo.ts';
import type { versionInput } from './agent-versions.schemas.ts';
import { agentsRepo } from './agents.repo.ts';
import type { ToolRegistry } from './tool-registry.ts';

const toVersion = (row: VersionRow) => ({
  version: row.version,
  live: row.version === row.liveVersion,
  ...behaviourOf(row),
  changeNote: row.changeNote,
  createdAt: row.createdAt,
  createdBy: row.createdByUserId,
  lastPublishedAt: row.lastPublishedAt,
  lastReplacedAt: row.lastReplacedAt,
});

/** Every line of `from` and `to`, each marked kept, removed or added, in order. */
function lineDiff(from: string, to: string) {
  return diffLines(from, to, { ignoreNewlineAtEof: true }).flatMap((change) =>
    change.value
      .replace(/\n$/, '')
      .split('\n')
      .map((text) => ({ op: change.added ? ('add' as const) : change.removed ? ('remove' as const) : ('keep' as const), text })),
  );
}

/** An agent's numbered versions: drafts, publishing (and rolling back), history and diffs. */
export function createAgentVersionsService(deps: { db: Kysely<DB>; tools: Pick<ToolRegistry, 'forOrg'> }) {
  const { db } = deps;

  async function versionOf(orgId: string, agentId: string, version: number) {
    const row = await agentVersionsRepo.find(db, orgId, agentId, version);
    if (!row) {
      if (!(await agentsRepo.find(db, orgId, agentId))) throw notFound('Agent');
      throw new AppError('not_found', `The agent has no version ${version}`);
    }
    return row;
  }

  return {
    /** The next version, not live: the fields given, the others as the live version has them. */
    async createDraft(orgId: string, agentId: string, input: z.output<typeof versionInput>, userId: string) {
      await requireKnownTools(deps.tools, orgId, input.tools);
      const { changeNote, ...fields } = input;
      const version = await db
        .transaction()
        .execute((trx) => nextVersion(trx, { orgId, agentId }, fields, { changeNote, userId, live: false }));
      if (version === undefined) throw notFound('Agent');
      return toVersion(await versionOf(orgId, agentId, version));
    },

    /** Makes a version live: new actions run with it (running ones keep theirs). Rolling back is publishing an older one. */
    async publish(orgId: string, agentId: string, version: number, userId: string) {
      const target = await versionOf(orgId, agentId, version);
      // A draft, or an old version, may name a tool the org has since removed.
      await requireKnownTools(deps.tools, orgId, target.tools, `version ${version}'s tools`);
      await db.transaction().execute(async (trx) => {
        const locked = await agentsRepo.lock(trx, orgId, agentId);
        if (!locked) throw notFound('Agent');
        await publish(trx, { orgId, agentId, liveVersion: locked.liveVersion }, version, userId);
      });
      return (await agentsRepo.find(db, orgId, agentId))!;
    },

    async list(orgId: string, agentId: string, query: { limit: number; cursor?: string }) {
      const below = decodeNumberCursor('version', query.cursor);
      const rows = await agentVersionsRepo.list(db, orgId, agentId, query.limit, below);
      if (rows.length === 0 && !(await agentsRepo.find(db, orgId, agentId))) throw notFound('Agent');
      const page = rows.slice(0, query.limit);
      return {
        versions: page.map(toVersion),
        nextCursor: rows.length > query.limit ? encodeNumberCursor('version', page.at(-1)!.version) : null,
      };
    },

    get: async (orgId: string, agentId: string, version: number) => toVersion(await versionOf(orgId, agentId, version)),

    /** What changed from `against` to `version`: each behaviour field that differs; instructions line by line. */
    async diff(orgId: string, agentId: string, version: number, against: number) {
      const [to, from] = await Promise.all([versionOf(orgId, agentId, version), versionOf(orgId, agentId, against)]);
      return {
        version,
        against,
        changes: changedFields(from, to).map((field) => ({
          field,
          from: from[field],
          to: to[field],
          ...(field === 'instructions' && { lines: lineDiff(from.instructions, to.instructions) }),
        })),
      };
    },

    async publications(orgId: string, agentId: string, query: { limit: number; cursor?: string }) {
      const rows = await agentVersionsRepo.publications(db, orgId, agentId, query.limit, decodeCursor(query.cursor));
      if (rows.length === 0 && !(await agentsRepo.find(db, orgId, agentId))) throw notFound('Agent');
      const { items, nextCursor } = toPage(rows, query.limit);
      return {
        publications: items.map((row) => ({
          version: row.version,
          previousVersion: row.previousVersion,
          publishedAt: row.createdAt,
          publishedBy: row.publishedByUserId,
        })),
        nextCursor,
      };
    },
  };
}

export type AgentVersionsService = ReturnType<typeof createAgentVersionsService>;
