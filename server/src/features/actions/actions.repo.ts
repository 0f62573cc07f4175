import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';

/** Actions' lifecycle, as the ledger reads it. */
export const actionsRepo = {
  events: (db: Kysely<DB>, actionId: string) =>
    db.selectFrom('actionEvents').select(['status', 'cause', 'data', 'createdAt']).where('actionId', '=', actionId).orderBy('createdAt').orderBy('id').execute(),
};
