import { type Kysely, sql } from 'kysely';
import { olderThan } from '../../db/keyset.ts';
import type { DB, ModelProvider } from '../../db/schema.ts';
import type { Cursor } from '../../lib/pagination.ts';

/** What a version of an agent does: the fields that change what a run does (its name does not). */
export interface Behaviour {
  instructions: string;
  provider: ModelProvider | null;
  model: string | null;
  tools: string[];
}

const VERSION_COLUMNS = [
  'v.version',
  'v.instructions',
  'v.provider',
  'v.model',
  'v.tools',
  'v.changeNote',
  'v.createdByUserId',
  'v.createdAt',
  'g.liveVersion',
] as const;

function versionsOf(db: Kysely<DB>, orgId: string, agentId: string) {
  return db
    .selectFrom('agentVersions as v')
    .innerJoin('agents as g', 'g.id', 'v.agentId')
    .select(VERSION_COLUMNS)
    .select((eb) => {
      const lastPublished = eb
        .selectFrom('agentPublications as p')
        .select((p) => p.fn.max('p.publishedAt').as('at'))
        .whereRef('p.agentId', '=', 'v.agentId')
        .whereRef('p.version', '=', 'v.version');
      // The publication that ended its last time live: the first after it whose previous version it was.
      const replaced = eb
        .selectFrom('agentPublications as n')
        .select((n) => n.fn.min('n.publishedAt').as('at'))
        .whereRef('n.agentId', '=', 'v.agentId')
        .whereRef('n.previousVersion', '=', 'v.version')
        .where('n.publishedAt', '>=', lastPublished);
      return [lastPublished.as('lastPublishedAt'), replaced.as('lastReplacedAt')];
    })
    .where('v.orgId', '=', orgId)
    .where('v.agentId', '=', agentId);
}
export type VersionRow = Awaited<ReturnType<ReturnType<typeof versionsOf>['executeTakeFirstOrThrow']>>;

/** An agent's versions and publications; every query is scoped by org_id. */
export const agentVersionsRepo = {
  latest: async (trx: Kysely<DB>, agentId: string): Promise<number> =>
    (
      await trx
        .selectFrom('agentVersions')
        .select((eb) => eb.fn.coalesce(eb.fn.max('version'), eb.lit(0)).as('latest'))
        .where('agentId', '=', agentId)
        .executeTakeFirstOrThrow()
    ).latest,

  /** The newest of the agent's versions that does just what `behaviour` does, if one does. */
  sameAs: async (trx: Kysely<DB>, agentId: string, behaviour: Behaviour): Promise<number | undefined> =>
    (
      await trx
        .selectFrom('agentVersions')
        .select('version')
        .where('agentId', '=', agentId)
        .where('instructions', '=', behaviour.instructions)
        .where('provider', 'is not distinct from', behaviour.provider)
        .where('model', 'is not distinct from', behaviour.model)
        .where(sql<boolean>`tools = ${JSON.stringify(behaviour.tools)}::jsonb`)
        .orderBy('version', 'desc')
        .limit(1)
        .executeTakeFirst()
    )?.version,

  insert: (
    trx: Kysely<DB>,
    row: Behaviour & { agentId: string; orgId: string; version: number; changeNote: string | null; createdByUserId: string },
  ) =>
    trx
      .insertInto('agentVersions')
      .values({ ...row, tools: JSON.stringify(row.tools) })
      .execute(),

  /** Newest first, `limit + 1` of them below `below` (a version number) when given. */
  list: (db: Kysely<DB>, orgId: string, agentId: string, limit: number, below?: number) =>
    versionsOf(db, orgId, agentId)
      .$if(below !== undefined, (q) => q.where('v.version', '<', below!))
      .orderBy('v.version', 'desc')
      .limit(limit + 1)
      .execute(),

  find: (db: Kysely<DB>, orgId: string, agentId: string, version: number) =>
    versionsOf(db, orgId, agentId).where('v.version', '=', version).executeTakeFirst(),

  recordPublication: (
    trx: Kysely<DB>,
    row: {
      id: string;
      agentId: string;
      orgId: string;
      version: number;
      previousVersion: number | null;
      publishedByUserId: string;
    },
  ) => trx.insertInto('agentPublications').values(row).execute(),

  /** Newest first, `limit + 1` of them after the cursor. */
  publications: (db: Kysely<DB>, orgId: string, agentId: string, limit: number, after?: Cursor) =>
    db
      .selectFrom('agentPublications')
      .select(['id', 'version', 'previousVersion', 'publishedByUserId', 'publishedAt as createdAt'])
      .where('orgId', '=', orgId)
      .where('agentId', '=', agentId)
      .$if(after !== undefined, (q) => q.where(olderThan(after!, 'publishedAt', 'id')))
      .orderBy('publishedAt', 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute(),
};
