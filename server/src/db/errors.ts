/** True when an error is PostgreSQL's unique violation (23505), optionally on a given constraint. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const e = error as { code?: string; constraint?: string } | null;
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** True when an error is PostgreSQL's foreign key violation (23503): a row it names was deleted meanwhile. */
export function isForeignKeyViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === '23503';
}
