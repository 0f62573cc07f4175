import { type Insertable, type Kysely, sql, type Updateable } from 'kysely';
import type { EmailInboxAgentRow, EmailInboxAgentsTable, EmailInboxRow } from '../../db/email-schema.ts';
import type { DB } from '../../db/schema.ts';

/** Inboxes and their agents; every query is scoped by org_id. */
export const inboxesRepo = {
  insert: (
    db: Kysely<DB>,
    row: { id: string; orgId: string; emailAddress: string; displayName: string },
  ): Promise<EmailInboxRow> => db.insertInto('emailInboxes').values(row).returningAll().executeTakeFirstOrThrow(),

  list: (db: Kysely<DB>, orgId: string): Promise<EmailInboxRow[]> =>
    db
      .selectFrom('emailInboxes')
      .selectAll()
      .where('orgId', '=', orgId)
      .orderBy('createdAt', 'desc')
      .orderBy('id', 'desc')
      .execute(),

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<EmailInboxRow | undefined> =>
    db.selectFrom('emailInboxes').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),

  rename: (db: Kysely<DB>, orgId: string, id: string, displayName: string): Promise<EmailInboxRow | undefined> =>
    db
      .updateTable('emailInboxes')
      .set({ displayName, updatedAt: sql<Date>`now()` })
      .where('orgId', '=', orgId)
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),

  remove: (db: Kysely<DB>, orgId: string, id: string): Promise<{ emailAddress: string } | undefined> =>
    db.deleteFrom('emailInboxes').where('orgId', '=', orgId).where('id', '=', id).returning('emailAddress').executeTakeFirst(),

  /** The agents of these inboxes, primary first. */
  agentsOf: (db: Kysely<DB>, inboxIds: string[]): Promise<EmailInboxAgentRow[]> =>
    inboxIds.length === 0
      ? Promise.resolve([])
      : db
          .selectFrom('emailInboxAgents')
          .selectAll()
          .where('inboxId', 'in', inboxIds)
          .orderBy('isPrimary', 'desc')
          .orderBy('createdAt')
          .execute(),

  insertAgent: (db: Kysely<DB>, row: Omit<Insertable<EmailInboxAgentsTable>, 'createdAt'>): Promise<EmailInboxAgentRow> =>
    db.insertInto('emailInboxAgents').values(row).returningAll().executeTakeFirstOrThrow(),

  updateAgent: (
    db: Kysely<DB>,
    orgId: string,
    inboxId: string,
    agentId: string,
    changes: Updateable<EmailInboxAgentsTable>,
  ): Promise<EmailInboxAgentRow | undefined> =>
    db
      .updateTable('emailInboxAgents')
      .set(changes)
      .where('orgId', '=', orgId)
      .where('inboxId', '=', inboxId)
      .where('agentId', '=', agentId)
      .returningAll()
      .executeTakeFirst(),

  findAgent: (db: Kysely<DB>, orgId: string, inboxId: string, agentId: string): Promise<EmailInboxAgentRow | undefined> =>
    db
      .selectFrom('emailInboxAgents')
      .selectAll()
      .where('orgId', '=', orgId)
      .where('inboxId', '=', inboxId)
      .where('agentId', '=', agentId)
      .executeTakeFirst(),

  /** Makes no agent of the inbox primary (before another becomes it). */
  demotePrimary: (db: Kysely<DB>, inboxId: string) =>
    db
      .updateTable('emailInboxAgents')
      .set({ isPrimary: false })
      .where('inboxId', '=', inboxId)
      .where('isPrimary', '=', true)
      .execute(),

  removeAgent: async (db: Kysely<DB>, orgId: string, inboxId: string, agentId: string): Promise<boolean> =>
    (
      await db
        .deleteFrom('emailInboxAgents')
        .where('orgId', '=', orgId)
        .where('inboxId', '=', inboxId)
        .where('agentId', '=', agentId)
        .executeTakeFirst()
    ).numDeletedRows > 0n,
};
