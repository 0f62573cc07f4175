import { z } from 'zod';

/** A Standard Webhooks signing secret, as the provider shows it (`whsec_` and base64). */
const signingSecret = z
  .string()
  .trim()
  .regex(/^whsec_[A-Za-z0-9+/]{16,}={0,2}$/, 'the webhook signing secret the provider shows: whsec_ followed by base64');

/**
 * The integration as saved or tested. The key and the secret may be left out where an integration is saved:
 * the saved ones are kept (a change of the sender does not need them again; the provider shows a key once).
 */
export const emailIntegrationInput = z.object({
  apiKey: z
    .string()
    .trim()
    .min(8)
    .max(500)
    .optional()
    .describe(
      "The provider's API key (full access: inbound email reads domains and received mail); left out, the saved one is kept",
    ),
  fromEmail: z
    .email()
    .max(320)
    .transform((address) => address.toLowerCase())
    .describe('The default sender, on a verified domain'),
  fromName: z.string().trim().min(1).max(200).nullish().describe('The display name of the default sender'),
  webhookSecret: signingSecret
    .optional()
    .describe("The signing secret of the provider's webhook that posts to /webhooks/mail; left out, the saved one is kept"),
});
export type EmailIntegrationInput = z.output<typeof emailIntegrationInput>;

export const emailIntegrationSchema = z
  .object({
    configured: z.boolean(),
    fromEmail: z.string().nullable(),
    fromName: z.string().nullable(),
    apiKeyHint: z.string().nullable(),
    webhookSecretHint: z.string().nullable(),
    domain: z
      .object({
        name: z.string(),
        status: z.string().nullable().describe("The provider's status when last checked; null: not checked yet"),
        receiving: z.boolean().nullable(),
        checkedAt: z.date().nullable(),
      })
      .nullable(),
    updatedAt: z.date().nullable(),
  })
  .meta({ id: 'EmailIntegration' });
export type PublicEmailIntegration = z.infer<typeof emailIntegrationSchema>;

export const connectionTestSchema = z
  .object({
    ok: z.boolean(),
    checks: z.array(
      z.object({ name: z.enum(['api_key', 'domain_verified', 'domain_receiving']), ok: z.boolean(), message: z.string() }),
    ),
  })
  .meta({ id: 'EmailConnectionTest' });
export type ConnectionTest = z.infer<typeof connectionTestSchema>;
