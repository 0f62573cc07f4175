import type { Kysely } from 'kysely';
import { z } from 'zod';
import type { DB, OrganizationRow } from '../../db/schema.ts';

const isUuid = (value: string) => z.uuid().safeParse(value).success;

export const orgsRepo = {
  insert: (db: Kysely<DB>, org: { id: string; slug: string; name: string }): Promise<OrganizationRow> =>
    db.insertInto('organizations').values(org).returningAll().executeTakeFirstOrThrow(),

  /** The first org created, if any (the server's hint at its first start names it). */
  oldest: (db: Kysely<DB>): Promise<OrganizationRow | undefined> =>
    db.selectFrom('organizations').selectAll().orderBy('createdAt').orderBy('id').limit(1).executeTakeFirst(),

  /** `{org}` in a URL is the slug or the ID. */
  findBySlugOrId: (db: Kysely<DB>, slugOrId: string): Promise<OrganizationRow | undefined> =>
    db
      .selectFrom('organizations')
      .selectAll()
      .where((eb) => (isUuid(slugOrId) ? eb.or([eb('id', '=', slugOrId), eb('slug', '=', slugOrId)]) : eb('slug', '=', slugOrId)))
      .executeTakeFirst(),

  /** The org only if `userId` is a member: one query, so a non-member learns nothing. */
  findForMember: (db: Kysely<DB>, slugOrId: string, userId: string): Promise<OrganizationRow | undefined> =>
    db
      .selectFrom('organizations')
      .innerJoin('memberships', 'memberships.orgId', 'organizations.id')
      .selectAll('organizations')
      .where('memberships.userId', '=', userId)
      .where((eb) =>
        isUuid(slugOrId)
          ? eb.or([eb('organizations.id', '=', slugOrId), eb('organizations.slug', '=', slugOrId)])
          : eb('organizations.slug', '=', slugOrId),
      )
      .executeTakeFirst(),

  isMember: async (db: Kysely<DB>, orgId: string, userId: string): Promise<boolean> =>
    (await db
      .selectFrom('memberships')
      .select('userId')
      .where('orgId', '=', orgId)
      .where('userId', '=', userId)
      .executeTakeFirst()) !== undefined,

  addMember: (db: Kysely<DB>, orgId: string, userId: string) =>
    db
      .insertInto('memberships')
      .values({ orgId, userId })
      .onConflict((oc) => oc.doNothing())
      .execute(),

  listForUser: (db: Kysely<DB>, userId: string): Promise<OrganizationRow[]> =>
    db
      .selectFrom('organizations')
      .innerJoin('memberships', 'memberships.orgId', 'organizations.id')
      .selectAll('organizations')
      .where('memberships.userId', '=', userId)
      .orderBy('organizations.slug')
      .execute(),

  listMembers: (db: Kysely<DB>, orgId: string) =>
    db
      .selectFrom('users')
      .innerJoin('memberships', 'memberships.userId', 'users.id')
      .selectAll('users')
      .select('memberships.createdAt as joinedAt')
      .where('memberships.orgId', '=', orgId)
      .orderBy('users.email')
      .execute(),
};
