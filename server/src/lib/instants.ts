import { z } from 'zod';

/**
 * The one rule for instants taken from outside (cursors, `since` and other dates): 1970 to 9999.
 * JavaScript dates reach years -271821 and +275760, which neither PostgreSQL nor any row here has.
 */
const EARLIEST = Date.UTC(1970, 0, 1);
const LATEST = Date.UTC(10_000, 0, 1) - 1;

export const isAcceptedInstant = (date: Date): boolean => {
  const time = date.getTime();
  return time >= EARLIEST && time <= LATEST;
};

/** An ISO 8601 date-time with its offset, as a Date within the accepted range. */
export const instantSchema = z.iso
  .datetime({ offset: true })
  .transform((value) => new Date(value))
  .refine(isAcceptedInstant, 'must be between 1970-01-01 and 9999-12-31');
