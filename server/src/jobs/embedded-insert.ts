import { sql, type RawBuilder } from 'kysely';
import type { Db, PgBoss } from 'pg-boss';

/**
 * pg-boss's own job insert for a queue, as a statement to embed in one of ours (a data-modifying
 * CTE): the jobs are written by the statement that creates what they work on, in one round trip,
 * with no transaction around two statements.
 *
 * The text is pg-boss's, captured once from `insert()` through an adapter that runs nothing, so the
 * jobs are the rows pg-boss itself would write. It is used only when it has the shape this relies on
 * (one INSERT whose jobs are its only parameter); otherwise there is no embedded insert and the
 * caller inserts through pg-boss as usual.
 */
export async function captureEmbeddedInsert(boss: Pick<PgBoss, 'insert'>, queue: string, jobOptions: object) {
  let captured: { text: string; values?: unknown[] } | undefined;
  const capturing: Db = {
    executeSql: async (text, values) => {
      captured = { text, values };
      return { rows: [] };
    },
  };
  await boss.insert(queue, [{ data: {} }], { db: capturing });
  const parts = captured?.text.split('$1');
  if (
    !captured ||
    !/^\s*INSERT INTO/i.test(captured.text) ||
    captured.values?.length !== 1 ||
    parts?.length !== 2 ||
    /\$\d/.test(parts.join(''))
  )
    return undefined;
  const [before, after] = parts as [string, string];
  const options = JSON.stringify(jobOptions);

  /** The insert of one job per row of `data`, a query with one jsonb column `data` (each job's payload). */
  return (data: RawBuilder<unknown>): RawBuilder<unknown> =>
    sql`${sql.raw(before)}(select coalesce(jsonb_agg(jsonb_build_object('data', d.data) || ${options}::jsonb), '[]')::text from (${data}) d)${sql.raw(after)}`;
}

export type EmbeddedInsert = (data: RawBuilder<unknown>) => RawBuilder<unknown>;
