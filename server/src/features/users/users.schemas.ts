import { z } from 'zod';
import type { UserRow } from '../../db/schema.ts';

/** The user object every auth route answers with; response schemas pick these fields, so a hash can never leak. */
export const userSchema = z.object({
  id: z.uuid(),
  email: z.string(),
  username: z.string(),
  firstName: z.string().nullable(),
  lastName: z.string().nullable(),
  codehostId: z.string().nullable(),
  idpId: z.string().nullable(),
  role: z.enum(['Admin', 'Guest']),
  provider: z.string(),
  externalUserId: z.string().nullable(),
});

export type PublicUser = z.infer<typeof userSchema>;

export function toPublicUser(user: UserRow): PublicUser {
  return {
    id: user.id,
    email: user.email,
    username: user.username,
    firstName: user.firstName,
    lastName: user.lastName,
    codehostId: user.codehostId,
    idpId: user.idpId,
    role: user.role,
    provider: user.provider,
    externalUserId: user.externalUserId,
  };
}
