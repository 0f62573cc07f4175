import type { Kysely, Transaction } from 'kysely';
import type { DB } from './schema.ts';

/** What each open transaction (opened by `transaction`) runs once it has committed. */
const pending = new WeakMap<Kysely<DB>, Array<() => void>>();

/**
 * Runs `work` in a transaction, then what it registered with `afterCommit` (wake-ups of the work it
 * committed: a job's workers), in order; nothing when it rolls back. Everything `work` awaits reads
 * through `trx`: on PGlite's one connection, a query on `db` could only run after this transaction, so
 * it fails at once (PGliteSelfWaitError; read what needs `db`, such as the org's tools, before opening it).
 */
export async function transaction<T>(db: Kysely<DB>, work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  const hooks: Array<() => void> = [];
  const result = await db.transaction().execute((trx) => {
    pending.set(trx, hooks);
    return work(trx);
  });
  for (const hook of hooks) hook();
  return result;
}

/** Runs `hook` once `trx` has committed; false when `trx` was not opened by `transaction` (nothing registered). */
export function afterCommit(trx: Kysely<DB>, hook: () => void): boolean {
  const hooks = pending.get(trx);
  hooks?.push(hook);
  return hooks !== undefined;
}
