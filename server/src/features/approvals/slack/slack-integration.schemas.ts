import { z } from 'zod';

/**
 * The app to connect. Where one is connected, the token and the secret may be left out: the saved ones are kept
 * (a new channel does not need them again).
 */
export const slackIntegrationInput = z
  .object({
    botToken: z
      .string()
      .trim()
      .regex(/^xoxb-[A-Za-z0-9-]{1,500}$/, "a bot token starts with 'xoxb-' (the app's Bot User OAuth Token)")
      .optional()
      .describe(
        "The Slack app's Bot User OAuth Token (xoxb-...); scopes chat:write, users:read, users:read.email. Left out, the " +
          'saved one is kept',
      ),
    signingSecret: z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9]{16,128}$/, "the app's Signing Secret, as Slack shows it (letters and digits)")
      .optional()
      .describe("The Slack app's Signing Secret: every interaction is verified with it. Left out, the saved one is kept"),
    channel: z
      .string()
      .trim()
      .regex(/^(#?[a-z0-9][a-z0-9._-]{0,79}|[CGD][A-Z0-9]{2,30})$/, 'a channel id (C0123ABC) or name (#approvals)')
      .describe('Where approval messages go: a channel id or name; the app must be in the channel'),
  })
  .strict();
export type SlackIntegrationInput = z.output<typeof slackIntegrationInput>;

export const slackIntegrationSchema = z
  .object({
    configured: z.boolean(),
    channel: z.string().nullable(),
    teamId: z.string().nullable().describe('The workspace auth.test named when it was saved'),
    teamName: z.string().nullable(),
    botTokenHint: z.string().nullable(),
    signingSecretHint: z.string().nullable(),
    interactivityUrl: z
      .string()
      .describe("What the app's Interactivity Request URL must be (Slack posts buttons and modals there)"),
    updatedAt: z.date().nullable(),
  })
  .meta({ id: 'SlackIntegration' });
export type PublicSlackIntegration = z.output<typeof slackIntegrationSchema>;

export const slackTestSchema = z.object({
  ok: z.literal(true),
  team: z.string().nullable(),
  channel: z.string(),
  ts: z.string().describe('The test message Slack posted in the channel'),
  readsHistory: z
    .boolean()
    .describe(
      "Whether the bot may read the channel's history (scope channels:history, or groups:history for a private channel): " +
        'then an approval message whose post a crash cut off is found in the channel, not posted twice',
    ),
});
