import { messages as protocolMessages, type PGlite, type Results } from '@electric-sql/pglite';
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
 * JSON document of about 50 deliveries) that was a third of the statement's time. Its result reader
 * copies every type's parser (a few hundred) into a new object per statement; `resultOf` does not.
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
      const { messages } = await pglite.runExclusive(async () => {
        // As PGlite's own query does: sent to a closed PGlite, the protocol loop spins for ever, blocking the process.
        await pglite._checkReady();
        return pglite.execProtocol(Buffer.concat(parts));
      });
      if (name !== undefined) {
        prepared.add(name);
        namer.ran(text, name, performance.now() - startedAt);
      }
      return resultOf<R>(messages, pglite.parsers);
    } catch (error) {
      if (name !== undefined) namer.forgetIfStale(text, error);
      throw error;
    }
  };
}

export type PgliteQuery = ReturnType<typeof createPgliteQuery>;

type Message = { name: string };
/** Commands whose tag ends with the rows they changed ("UPDATE n"); INSERT's is "INSERT 0 n". */
const COUNTING_COMMANDS = new Set(['UPDATE', 'DELETE', 'MERGE', 'COPY']);

/** The rows (parsed by their columns' types) and the rows changed, as PGlite's `parseResults` reads one statement's. */
function resultOf<R>(messages: Message[], parsers: PGlite['parsers']): Results<R> {
  let fields: Results['fields'] = [];
  const rows: Record<string, unknown>[] = [];
  let affectedRows = 0;
  for (const message of messages) {
    if (message instanceof protocolMessages.RowDescriptionMessage) {
      fields = message.fields.map(({ name, dataTypeID }) => ({ name, dataTypeID }));
    } else if (message instanceof protocolMessages.DataRowMessage) {
      const row: Record<string, unknown> = {};
      message.fields.forEach((value, index) => {
        const { name, dataTypeID } = fields[index]!;
        const parse = parsers[dataTypeID];
        row[name] = value === null ? null : parse ? parse(value, dataTypeID) : value;
      });
      rows.push(row);
    } else if (message instanceof protocolMessages.CommandCompleteMessage) {
      const [command = '', ...counts] = message.text.split(' ');
      if (command === 'INSERT') affectedRows += Number(counts[1]);
      else if (COUNTING_COMMANDS.has(command)) affectedRows += Number(counts[0]);
    }
  }
  return { rows: rows as R[], fields, affectedRows };
}
