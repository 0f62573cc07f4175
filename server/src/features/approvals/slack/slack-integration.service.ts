import type { Kysely } from 'kysely';
import type { DB } from '../../../db/schema.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import { notFound } from '../../../lib/errors.ts';
import { savedSecretsChanged, withSavedSecrets } from '../../../lib/saved-secrets.ts';
import { missingScopes, SlackApiError, type SlackClient, type SlackClients, slackRefused } from './slack-client.ts';
import type { PublicSlackIntegration, SlackIntegrationInput } from './slack-integration.schemas.ts';
import { type SlackIntegrationRow, slackIntegrationRepo } from './slack-integration.repo.ts';

const hint = (secret: string) => `...${secret.slice(-4)}`;

function toPublic(row: SlackIntegrationRow | undefined, interactivityUrl: string): PublicSlackIntegration {
  return {
    configured: row !== undefined,
    channel: row?.channel ?? null,
    teamId: row?.teamId ?? null,
    teamName: row?.teamName ?? null,
    botTokenHint: row?.botTokenHint ?? null,
    signingSecretHint: row?.signingSecretHint ?? null,
    interactivityUrl,
    updatedAt: row?.updatedAt ?? null,
  };
}

/** An org's connected Slack app, opened for use: its client, channel and signing secret. */
export interface OrgSlack {
  client: SlackClient;
  /** The workspace the bot token is of (auth.test's team_id when it was saved): Slack's user ids are its own. */
  teamId: string;
  channel: string;
  signingSecret: string;
}

/**
 * An org's own Slack app for approvals. Saving checks the bot token with auth.test first: a token
 * Slack refuses saves nothing. The token and the signing secret are kept encrypted and shown as hints.
 */
export function createSlackIntegrationService(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  slack: SlackClients;
  /** The service's public origin: the app's Interactivity Request URL is on it. */
  apiHost: string;
}) {
  const interactivityUrl = (orgSlug: string) => `${deps.apiHost}/webhooks/slack/${encodeURIComponent(orgSlug)}`;

  async function open(orgId: string): Promise<OrgSlack | undefined> {
    const row = await slackIntegrationRepo.find(deps.db, orgId);
    if (!row) return undefined;
    return {
      client: deps.slack(deps.box.decrypt(row.botToken)),
      teamId: row.teamId,
      channel: row.channel,
      signingSecret: deps.box.decrypt(row.signingSecret),
    };
  }

  /** The input with the saved token and secret where it leaves them out. */
  const withSaved = (orgId: string, input: SlackIntegrationInput) =>
    withSavedSecrets(
      input,
      ['botToken', 'signingSecret'],
      async () => {
        const row = await slackIntegrationRepo.find(deps.db, orgId);
        return row && { botToken: row.botToken, signingSecret: row.signingSecret };
      },
      (sealed) => deps.box.decrypt(sealed),
      'no Slack app is connected',
    );

  return {
    open,
    async get(org: { id: string; slug: string }) {
      return toPublic(await slackIntegrationRepo.find(deps.db, org.id), interactivityUrl(org.slug));
    },
    /** Connects the app (the saved token and secret kept where the input leaves them out). */
    async save(org: { id: string; slug: string }, change: SlackIntegrationInput) {
      const { input, kept } = await withSaved(org.id, change);
      let team: Awaited<ReturnType<SlackClient['authTest']>>;
      try {
        team = await deps.slack(input.botToken).authTest();
      } catch (error) {
        if (error instanceof SlackApiError) throw slackRefused(error, 'Slack refused the bot token');
        throw error;
      }
      // A bot that cannot post, or cannot tell who clicked, would refuse every decision: said now, not at the first click.
      const lacking = missingScopes(team.scopes);
      if (lacking) throw slackRefused(lacking, 'The bot token cannot be used for approvals');
      const fields = {
        orgId: org.id,
        botToken: kept.botToken ?? deps.box.encrypt(input.botToken),
        botTokenHint: hint(input.botToken),
        signingSecret: kept.signingSecret ?? deps.box.encrypt(input.signingSecret),
        signingSecretHint: hint(input.signingSecret),
        channel: input.channel,
        teamId: team.teamId,
        teamName: team.team,
        botUserId: team.botUserId,
      };
      const row = await slackIntegrationRepo.save(deps.db, fields, kept);
      if (!row) throw savedSecretsChanged('Slack app');
      return toPublic(row, interactivityUrl(org.slug));
    },
    async remove(orgId: string) {
      if (!(await slackIntegrationRepo.remove(deps.db, orgId))) throw notFound('Slack integration');
    },
    /** Posts a test message in the channel: the token, the channel and the app's membership in it, checked. */
    async test(orgId: string) {
      const slack = await open(orgId);
      if (!slack) throw notFound('Slack integration');
      try {
        const team = await slack.client.authTest();
        const lacking = missingScopes(team.scopes);
        if (lacking) throw slackRefused(lacking, 'The bot token cannot be used for approvals');
        const text = 'Agent Platform is connected: approval messages will come to this channel.';
        const posted = await slack.client.postMessage({ channel: slack.channel, text, blocks: [] });
        const since = (Number(posted.ts) - 1).toFixed(6);
        const readsHistory = await slack.client.history(posted.channel, since, 1).then(
          () => true,
          (error) => {
            if (error instanceof SlackApiError) return false;
            throw error;
          },
        );
        return { ok: true as const, team: team.team, channel: posted.channel, ts: posted.ts, readsHistory };
      } catch (error) {
        if (error instanceof SlackApiError) throw slackRefused(error, 'Slack refused the test message');
        throw error;
      }
    },
  };
}

export type SlackIntegrationService = ReturnType<typeof createSlackIntegrationService>;
