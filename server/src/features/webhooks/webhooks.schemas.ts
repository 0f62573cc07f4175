import { isIP } from 'node:net';
import { z } from 'zod';
import { VERIFICATION_SCHEMES } from '../../db/schema.ts';
import { patchSchema } from '../../lib/patch-schema.ts';
import { orgParams } from '../../lib/http-schemas.ts';

export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;
export const MAX_PAYLOAD_BYTES_LIMIT = 10 * 1024 * 1024;

function isIpOrCidr(value: string): boolean {
  const [address, bits, extra] = value.split('/');
  const family = isIP(address ?? '');
  if (!family || extra !== undefined) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$|^24:00$/, 'HH:MM, 00:00 to 24:00');

export const scheduleSchema = z.object({
  timezone: z.string().refine(isTimeZone, 'not an IANA time zone').default('UTC'),
  windows: z
    .array(
      z
        .object({ days: z.array(z.int().min(0).max(6)).min(1).max(7).describe('0 = Sunday'), start: hhmm, end: hhmm })
        .refine((w) => w.start < w.end, 'start must be before end'),
    )
    .min(1)
    .max(50),
});

export const webhookInput = z.object({
  name: z.string().trim().min(1).max(200),
  actionRuleId: z.uuid().nullable().default(null),
  agentId: z.uuid().nullable().default(null),
  runAsUserId: z.uuid().nullable().default(null),
  eventFilter: z
    .array(
      z
        .string()
        .min(1)
        .max(200)
        .regex(/^[A-Za-z0-9_.:*/-]+$/, 'eventType pattern: letters, digits, _ . : / - and * wildcards'),
    )
    .max(100)
    .default([]),
  verificationScheme: z.enum(VERIFICATION_SCHEMES).default('wh'),
  rateLimitPerMinute: z.int().min(1).max(1000).default(100),
  allowRequestOverrides: z.boolean().default(false),
  enabled: z.boolean().default(true),
  allowedOrigins: z
    .array(z.url().transform((url) => new URL(url).origin))
    .max(50)
    .default([]),
  blockedIps: z.array(z.string().refine(isIpOrCidr, 'an IPv4/IPv6 address or CIDR range')).max(500).default([]),
  maxPayloadBytes: z.int().min(1024).max(MAX_PAYLOAD_BYTES_LIMIT).default(DEFAULT_MAX_PAYLOAD_BYTES),
  schedule: scheduleSchema.nullable().default(null),
});
export type WebhookInput = z.output<typeof webhookInput>;

export const webhookPatch = patchSchema(webhookInput);
export type WebhookPatch = z.output<typeof webhookPatch>;

export const webhookSchema = z.object({
  id: z.uuid(),
  name: z.string(),
  webhookIdentifier: z.string(),
  url: z.string(),
  actionRuleId: z.uuid().nullable(),
  agentId: z.uuid().nullable(),
  runAsUserId: z.uuid().nullable(),
  eventFilter: z.array(z.string()),
  verificationScheme: z.enum(VERIFICATION_SCHEMES),
  rateLimitPerMinute: z.int(),
  allowRequestOverrides: z.boolean(),
  enabled: z.boolean(),
  allowedOrigins: z.array(z.string()),
  blockedIps: z.array(z.string()),
  maxPayloadBytes: z.int(),
  schedule: scheduleSchema.nullable(),
  createdAt: z.date(),
  updatedAt: z.date(),
});
export type PublicWebhook = z.infer<typeof webhookSchema>;

export const webhookCreated = z.object({
  webhook: webhookSchema,
  secret: z.string().describe('Shown only here and on rotate-secret'),
  url: z.string(),
});
export const secretRotated = z.object({ secret: z.string(), webhookIdentifier: z.string(), url: z.string() });
export const webhookParams = orgParams.extend({ id: z.uuid() });

/** Send Test: a test event for a webhook, straight into an action (userId) or through its URL. */
export const sendTestBody = z
  .object({
    eventType: z.string().min(1).max(200).default('test.event'),
    data: z.record(z.string(), z.unknown()).default({ test: true }),
    externalId: z.string().min(1).max(500).optional(),
    userId: z.uuid().optional().describe('An internal user: creates the action directly, without signature verification'),
  })
  .prefault({});
