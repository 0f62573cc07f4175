import { type PGlite, type Results, parse as pgliteResults } from '@electric-sql/pglite';
import pgUtils from 'pg/lib/utils.js';
import { serialize } from 'pg-protocol';
import type { StatementNamer } from './prepared.ts';

/**
 * A statement with parameters on PGlite, sent as node-postgres sends one to PostgreSQL: Bind,
 * Describe, Execute and Sync in one message (one trip into the database), after a Parse the first
 * time a named statement runs; the values serialized by their JavaScript type as node-postgres
 * serializes them, so both databases get the same text. Repeated statements are prepared by the
 * same rules as on PostgreSQL (`StatementNamer`: named after their second run, planned again as
 * their tables grow).
 *
 * PGlite's own `query` makes six trips for every statement (Parse, a Describe to learn the
 * parameters' types, Bind, Describe, Execute, Sync), parses and plans it at every call, and counts
 * each string's UTF-8 length in JavaScript, twice: on the group-committed ingest statement (one
 * JSON document of about 50 deliveries) that was a third of the statement's time.
 */
export function createPgliteQuery(pglite: PGlite, namer: StatementNamer) {
  // Names prepared on this database's one connection.
  const prepared = new Set<string>();

  return async function query<R>(text: string, params: readonly unknown[]): Promise<Results<R>> {
    const values = params.map((value) => pgUtils.prepareValue(value));
    const name = namer.nameOf(text);
    const parts: Buffer[] = [];
    if (name === undefined) parts.push(serialize.parse({ text }));
    else if (!prepared.has(name)) {
      // A Parse whose Bind or Execute failed left its name behind; closing a name that does not exist is no error.
      parts.push(serialize.close({ type: 'S', name }), serialize.parse({ text, name }));
    }
    parts.push(
      serialize.bind({ statement: name, values }),
      serialize.describe({ type: 'P' }),
      serialize.execute(),
      serialize.sync(),
    );
    const startedAt = performance.now();
    try {
      const { messages } = await pglite.runExclusive(() => pglite.execProtocol(Buffer.concat(parts)));
      if (name !== undefined) {
        prepared.add(name);
        namer.ran(text, name, performance.now() - startedAt);
      }
      return pgliteResults.parseResults(messages, pglite.parsers)[0] as Results<R>;
    } catch (error) {
      if (name !== undefined) namer.forgetIfStale(text, error);
      throw error;
    }
  };
}

export type PgliteQuery = ReturnType<typeof createPgliteQuery>;
