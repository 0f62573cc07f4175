import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ActionRow, ApprovalMode, DB } from '../../db/schema.ts';

export interface NewAction {
  id: string;
  orgId: string;
  webhookId: string | null;
  deliveryId: string;
  agentId: string | null;
  actionRuleId: string | null;
  runAsUserId: string;
  eventType: string;
  externalId: string | null;
  instructions: string | null;
  data: Record<string, unknown>;
  toolApprovals: Record<string, ApprovalMode>;
}

export const actionsRepo = {
  /**
   * Inserts the action unless one with the same (webhook, externalId) exists: the unique index
   * decides, so concurrent duplicates create exactly one. Returns the id and whether it is new.
   */
  async insertIdempotent(db: Kysely<DB>, action: NewAction): Promise<{ id: string; created: boolean }> {
    const inserted = await db
      .insertInto('actions')
      .values({ ...action, status: 'queued', data: JSON.stringify(action.data), toolApprovals: JSON.stringify(action.toolApprovals) })
      .onConflict((oc) => oc.columns(['webhookId', 'externalId']).where('externalId', 'is not', null).doNothing())
      .returning('id')
      .executeTakeFirst();
    if (inserted) return { id: inserted.id, created: true };
    const existing = await db
      .selectFrom('actions')
      .select('id')
      .where('webhookId', '=', action.webhookId)
      .where('externalId', '=', action.externalId)
      .executeTakeFirstOrThrow();
    return { id: existing.id, created: false };
  },

  insertEvent: (db: Kysely<DB>, event: { actionId: string; orgId: string; status: string; cause: string; data?: unknown }) =>
    db
      .insertInto('actionEvents')
      .values({ id: randomUUID(), actionId: event.actionId, orgId: event.orgId, status: event.status, cause: event.cause, data: event.data === undefined ? null : JSON.stringify(event.data) })
      .execute(),

  find: (db: Kysely<DB>, orgId: string, id: string): Promise<ActionRow | undefined> =>
    db.selectFrom('actions').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst(),

  events: (db: Kysely<DB>, actionId: string) =>
    db.selectFrom('actionEvents').select(['status', 'cause', 'data', 'createdAt']).where('actionId', '=', actionId).orderBy('createdAt').orderBy('id').execute(),
};
