import { z } from 'zod';
import { ERROR_STATUS, type ErrorCode } from './errors.ts';

/** Every error body: a human message and one code of the closed set in errors.ts. */
export const errorSchema = z
  .object({
    error: z.string(),
    code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
  })
  .meta({ id: 'Error' });

/** OpenAPI: the routes that take the session cookie or `Authorization: Bearer`. */
export const sessionSecurity: Array<Record<string, string[]>> = [{ session: [] }, { bearer: [] }];

/** Every org-scoped console route starts with `/orgs/:org` (its slug or ID). */
export const orgParams = z.object({ org: z.string().min(1).max(100) });
