import { ErrorCode, LogLevel, WebClient } from '@slack/web-api';
import { AppError } from '../../../lib/errors.ts';

/** A Slack Block Kit block or view, as we build them (slack-blocks.ts). */
export type Block = Record<string, unknown>;

/** What Slack's Web API said when it refused a call: its own error (`invalid_auth`, `channel_not_found`, ...). */
export class SlackApiError extends Error {
  readonly slackError: string;
  /** With `missing_scope`: the scopes the token lacks. */
  readonly neededScopes?: string[];
  constructor(slackError: string, message = `Slack answered ${slackError}`, neededScopes?: string[]) {
    super(message);
    this.name = 'SlackApiError';
    this.slackError = slackError;
    if (neededScopes) this.neededScopes = neededScopes;
  }
}

/** What approvals need of the app's bot: to post and update messages, and to know who clicked by their email. */
const REQUIRED_SCOPES = ['chat:write', 'users:read', 'users:read.email'] as const;

/**
 * A token without the scopes approvals need, as Slack names that refusal (`missing_scope`). Slack
 * lists a token's scopes with every answer; a proxy that drops the list leaves nothing to check.
 */
export function missingScopes(scopes: string[] | null): SlackApiError | undefined {
  const missing = scopes ? REQUIRED_SCOPES.filter((scope) => !scopes.includes(scope)) : [];
  return missing.length === 0 ? undefined : new SlackApiError('missing_scope', undefined, missing);
}

/** A Slack refusal as the API's error: 422 `slack_refused`, with Slack's own error named. */
export function slackRefused(error: SlackApiError, what: string): AppError {
  const needed = error.neededScopes;
  const them = needed?.length === 1 ? 'it' : 'them';
  const fix = needed
    ? ` (the bot needs ${needed.join(', ')}: add ${them} to the app's bot token scopes and reinstall the app)`
    : '';
  return new AppError('slack_refused', `${what}: ${error.slackError}${fix}`, { details: { slackError: error.slackError } });
}

/**
 * The methods of Slack's Web API that approvals use, through the official client, for one org's bot
 * token. Its base URL is the deployment's (SLACK_API_URL). A 429 is retried twice after its
 * Retry-After; anything Slack refuses becomes a SlackApiError with Slack's own error code.
 */
export interface SlackClient {
  /** The token's workspace and bot; `scopes`: what Slack says it was granted (X-OAuth-Scopes), null when not said. */
  authTest(): Promise<{ teamId: string; team: string | null; botUserId: string | null; scopes: string[] | null }>;
  postMessage(message: {
    channel: string;
    text: string;
    blocks: Block[];
    metadata?: SlackMetadata;
  }): Promise<{ channel: string; ts: string }>;
  /**
   * The channel's messages since `oldest` (a Slack ts), newest first, with their metadata (scope
   * channels:history, or groups:history for a private channel); up to `pages` pages of 200.
   */
  history(channel: string, oldest: string, pages: number): Promise<Array<{ ts: string; metadata: SlackMetadata | null }>>;
  update(message: { channel: string; ts: string; text: string; blocks: Block[]; metadata?: SlackMetadata }): Promise<void>;
  postEphemeral(message: { channel: string; user: string; text: string }): Promise<void>;
  /** A workspace user's email (scope users:read.email); null when Slack shows none. */
  userEmail(user: string): Promise<string | null>;
  /** A workspace user by email, or null (users_not_found). */
  userIdByEmail(email: string): Promise<string | null>;
  openView(triggerId: string, view: Block): Promise<void>;
}

/** What a message carries for the app alone (Slack's message metadata): not shown in the channel. */
export interface SlackMetadata {
  event_type: string;
  event_payload: Record<string, string>;
}

export type SlackClients = (botToken: string) => SlackClient;

async function call<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const coded = error as { code?: string; data?: { error?: string }; message?: string };
    if (coded.code === ErrorCode.PlatformError) throw new SlackApiError(coded.data?.error ?? 'unknown_error');
    if (coded.code === ErrorCode.RateLimitedError) throw new SlackApiError('ratelimited');
    if (coded.code === ErrorCode.HTTPError || coded.code === ErrorCode.RequestError)
      throw new SlackApiError('unreachable', `Slack could not be reached: ${coded.message ?? 'no answer'}`);
    throw error;
  }
}

export function createSlackClients(options: { baseUrl: string; timeoutMs: number }): SlackClients {
  return (botToken) => {
    const settings = {
      slackApiUrl: options.baseUrl,
      timeout: options.timeoutMs,
      logLevel: LogLevel.ERROR,
      // A method name is never a URL of someone else's choosing.
      allowAbsoluteUrls: false,
    };
    // Interactive paths: a few quick retries, not the client's default half hour.
    const web = new WebClient(botToken, {
      ...settings,
      retryConfig: { retries: 2, factor: 1, minTimeout: 200, maxTimeout: 2000 },
    });
    // A post is not idempotent: the client retries a timeout or a lost connection as it would a 429, and
    // a post Slack took but did not answer in time would be posted twice. Posts are tried once; their
    // caller decides what an unanswered one means.
    const once = new WebClient(botToken, { ...settings, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true });
    return {
      authTest: () =>
        call(async () => {
          const answer = await web.auth.test();
          const scopes = answer.response_metadata?.scopes ?? null;
          return { teamId: answer.team_id ?? '', team: answer.team ?? null, botUserId: answer.user_id ?? null, scopes };
        }),
      postMessage: (message) =>
        call(async () => {
          const { blocks, ...rest } = message;
          const answer = await once.chat.postMessage({ ...rest, ...(blocks.length > 0 && { blocks }) });
          return { channel: answer.channel ?? message.channel, ts: answer.ts ?? '' };
        }),
      history: (channel, oldest, pages) =>
        call(async () => {
          const found: Array<{ ts: string; metadata: SlackMetadata | null }> = [];
          let cursor: string | undefined;
          for (let page = 0; page < pages; page++) {
            const answer = await web.conversations.history({ channel, oldest, limit: 200, include_all_metadata: true, cursor });
            for (const message of answer.messages ?? []) {
              // Other apps' messages share the channel: metadata counts only with a type and a payload object.
              const metadata = message.metadata as Partial<SlackMetadata> | undefined;
              const payload = metadata?.event_payload;
              const usable = typeof metadata?.event_type === 'string' && typeof payload === 'object' && payload !== null;
              if (message.ts) found.push({ ts: message.ts, metadata: usable ? (metadata as SlackMetadata) : null });
            }
            cursor = answer.response_metadata?.next_cursor || undefined;
            if (!answer.has_more || !cursor) break;
          }
          return found;
        }),
      update: (message) => call(async () => void (await web.chat.update(message))),
      postEphemeral: (message) => call(async () => void (await web.chat.postEphemeral(message))),
      userEmail: (user) => call(async () => (await web.users.info({ user })).user?.profile?.email ?? null),
      userIdByEmail: async (email) => {
        try {
          return await call(async () => (await web.users.lookupByEmail({ email })).user?.id ?? null);
        } catch (error) {
          if (error instanceof SlackApiError && error.slackError === 'users_not_found') return null;
          throw error;
        }
      },
      openView: (triggerId, view) =>
        call(async () => void (await web.views.open({ trigger_id: triggerId, view: view as never }))),
    };
  };
}
