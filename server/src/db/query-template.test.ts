import { randomUUID } from 'node:crypto';
import { NoResultError, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/helpers/test-database.ts';
import type { Database } from './database.ts';
import { queryTemplate, valuesOf } from './query-template.ts';

describe('query templates', () => {
  let database: Database;
  const orgs = [randomUUID(), randomUUID(), randomUUID()];
  beforeAll(async () => {
    database = await createTestDatabase();
    await database.db
      .insertInto('organizations')
      .values(orgs.map((id, index) => ({ id, slug: `template-${index}-${id}`, name: `Org ${index}` })))
      .execute();
  });
  afterAll(() => database.close());

  it('builds once and binds each call its own values (an array as one value), in a transaction as outside one', async () => {
    let builds = 0;
    const named = queryTemplate((db, args: { ids: string[]; prefix: string }) => {
      builds++;
      return db
        .selectFrom('organizations')
        .select(['id', 'name', sql<boolean>`slug like ${args.prefix} || '%'`.as('prefixed')])
        .where((eb) => eb('id', '=', eb.fn.any(eb.val(args.ids))))
        .where('name', '!=', 'never')
        .orderBy('name');
    });
    expect(await named.rows(database.db, { ids: [orgs[0]!, orgs[2]!], prefix: 'template-0' })).toEqual([
      { id: orgs[0], name: 'Org 0', prefixed: true },
      { id: orgs[2], name: 'Org 2', prefixed: false },
    ]);
    const inTransaction = await database.db
      .transaction()
      .execute((trx) => named.first(trx, { ids: [orgs[1]!], prefix: 'template-1' }));
    expect(inTransaction).toEqual({ id: orgs[1], name: 'Org 1', prefixed: true });
    expect(await named.rows(database.db, { ids: [], prefix: 'x' })).toEqual([]);
    expect(builds).toBe(1);
  });

  it("returns a write's rows; `only` refuses no row as kysely does, `first` gives undefined", async () => {
    const rename = queryTemplate((db, args: { id: string; name: string }) =>
      db.updateTable('organizations').set({ name: args.name }).where('id', '=', args.id).returning(['id', 'name']),
    );
    expect(await rename.only(database.db, { id: orgs[1]!, name: 'Renamed' })).toEqual({ id: orgs[1], name: 'Renamed' });
    await expect(rename.only(database.db, { id: randomUUID(), name: 'Nobody' })).rejects.toBeInstanceOf(NoResultError);
    expect(await rename.first(database.db, { id: randomUUID(), name: 'Nobody' })).toBeUndefined();
  });

  it('refuses, on its first call, a builder that uses an argument other than as a value', async () => {
    const branching = queryTemplate((db, args: { ids: string[] }) =>
      db
        .selectFrom('organizations')
        .select('id')
        .where('id', 'in', args.ids.length > 0 ? args.ids : ['']),
    );
    await expect(branching.rows(database.db, { ids: [orgs[0]!] })).rejects.toThrow(
      'A query template used arguments other than as values: ids',
    );
    const written = queryTemplate((db, args: { column: string }) =>
      db.selectFrom('organizations').select(sql.raw<string>(`${args.column}`).as('picked')),
    );
    await expect(written.rows(database.db, { column: 'name' })).rejects.toThrow(/other than as values: column/);
  });

  it('inserts the columns valuesOf names, each bound per call; a column left out takes its default', async () => {
    const insert = queryTemplate((db, args: { id: string; slug: string; name: string }) =>
      db
        .insertInto('organizations')
        .values(valuesOf(args, ['id', 'slug', 'name']))
        .returning(['id', 'slug', 'name', 'createdAt']),
    );
    const [first, second] = [randomUUID(), randomUUID()];
    const made = await insert.only(database.db, { id: first, slug: `values-${first}`, name: 'First' });
    expect(made).toMatchObject({ id: first, slug: `values-${first}`, name: 'First', createdAt: expect.any(Date) });
    expect(await insert.only(database.db, { id: second, slug: `values-${second}`, name: 'Second' })).toMatchObject({
      id: second,
      name: 'Second',
    });
  });
});
