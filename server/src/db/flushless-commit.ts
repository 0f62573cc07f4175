import { sql } from 'kysely';

/**
 * A condition, always true, that makes its statement's transaction commit without waiting for the WAL
 * to reach the disk (synchronous_commit off for that transaction only: the connection's next statement
 * waits as before). Only for statements that merely take work, a claim or a lease: a crash of the
 * database that loses one means the work is taken and done again, as when the process that took it
 * dies. The work's outcome is written by a commit that does wait, and that flushes the claim with it
 * (the WAL is written in order). A commit that waits cost about 0.2 ms of PostgreSQL's CPU here, and as
 * long again before the work could start (docs/benchmarks.md).
 */
export const commitWithoutFlush = sql<boolean>`(select set_config('synchronous_commit', 'off', true)) is not null`;
