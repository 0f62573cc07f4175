import { z } from 'zod';
import { userSchema } from '../users/users.schemas.ts';

export const successSchema = z.object({ success: z.literal(true), message: z.string().optional() });

export const credentialsLoginBody = z.object({
  email: z.email().max(320),
  password: z.string().min(1).max(1024),
});

export const forgotPasswordBody = z.object({ email: z.email().max(320) });

export const resetPasswordBody = z.object({
  token: z.string().min(1).max(512),
  newPassword: z.string().min(1).max(1024),
});

export const externalAuthBody = z.object({
  authToken: z.string().min(1).max(16_384),
  providerName: z.string().min(1).max(100).optional(),
});

export const externalAuthResponse = z.object({
  user: userSchema,
  /** For cross-origin clients, which cannot read the HTTP-only cookie: send it as `Authorization: Bearer`. */
  sessionToken: z.string(),
  expiresAt: z.iso.datetime(),
});

export const oauthCallbackQuery = z.object({
  code: z.string().max(2048).optional(),
  state: z.string().max(2048).optional(),
  error: z.string().max(256).optional(),
  error_description: z.string().max(1024).optional(),
});
