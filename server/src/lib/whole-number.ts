import { z } from 'zod';

/**
 * A whole number read from a path or a query string. zod's own message for "abc", "1.5" or a missing
 * value reads "expected number, received NaN"; this one says what to send.
 */
export const wholeNumber = () =>
  z.coerce.number({ error: (issue) => (issue.code === 'invalid_type' ? 'expected a whole number' : undefined) }).int();
