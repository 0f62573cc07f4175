import { createHmac, randomBytes } from 'node:crypto';
import { type AnswerHold, answerHold } from './answer-hold.ts';
import { sendJson, startLoopbackServer } from './http.ts';

/**
 * Slack's Web API as its public docs describe it, on loopback: `POST /api/<method>` with a bearer
 * token, a form-encoded or JSON body, and HTTP 200 `{ ok: true, ... }` or `{ ok: false, error }`.
 * Only the methods approvals use: auth.test, chat.postMessage, chat.update, chat.postEphemeral,
 * users.info, users.lookupByEmail, views.open (with the trigger ids it issued, and Block Kit's limits
 * on a modal). One workspace, with its users by email.
 */
export interface SlackCall {
  method: string;
  token: string;
  args: Record<string, any>;
}

export interface FakeSlackUser {
  id: string;
  email: string | null;
}

/** What Block Kit's documented limits refuse in a modal (Slack answers `invalid_arguments`), or undefined. */
function viewProblem(view: Record<string, any>): string | undefined {
  const blocks: Array<Record<string, any>> = view.blocks ?? [];
  if (view.type !== 'modal' || !view.title?.text || view.title.text.length > 24) return 'title';
  if (view.submit && view.submit.text.length > 24) return 'submit';
  if (String(view.private_metadata ?? '').length > 3000 || blocks.length > 100) return 'size';
  const inputs = blocks.filter((block) => block.type === 'input');
  if (inputs.length > 0 && !view.submit) return 'an input block needs a submit button';
  for (const { element } of inputs)
    if (element?.type === 'plain_text_input' && ((element.max_length ?? 0) > 3000 || (element.min_length ?? 0) > 3000))
      return 'plain_text_input length';
  return undefined;
}

export async function startFakeSlack() {
  const token = `xoxb-${randomBytes(12).toString('hex')}`;
  const calls: SlackCall[] = [];
  const users: FakeSlackUser[] = [];
  const messages = new Map<string, { channel: string; ts: string; text: string; blocks: any[]; metadata?: any }>();
  const knownChannels = new Set(['C0APPROVALS']);
  let sequence = 0;
  /** The scopes the app's bot token was granted (an install with fewer: `grantScopes`). */
  let scopes = ['chat:write', 'users:read', 'users:read.email', 'channels:read'];
  /** Trigger ids given with interactions: each opens one modal, within 3 seconds of its issue. */
  const triggers = new Map<string, { issuedAt: number; used: boolean }>();
  /** Held chat.postMessage answers: the message is in the channel, its answer not yet sent. */
  const holds: AnswerHold[] = [];
  /** Held chat.update calls: received, not yet applied (a call slow on its way lands late). */
  const updateHolds: AnswerHold[] = [];
  /** Held auth.test calls: received, not yet answered. */
  const authTestHolds: AnswerHold[] = [];

  const server = await startLoopbackServer(async (request, response, body) => {
    const method = request.url?.replace(/^\/api\//, '') ?? '';
    const given = request.headers.authorization?.replace(/^Bearer /, '') ?? '';
    const args: Record<string, any> = request.headers['content-type']?.includes('application/json')
      ? JSON.parse(body || '{}')
      : Object.fromEntries(new URLSearchParams(body));
    // The client sends arrays and objects form-encoded as JSON strings.
    for (const key of ['blocks', 'view', 'metadata']) if (typeof args[key] === 'string') args[key] = JSON.parse(args[key]);
    calls.push({ method, token: given, args });
    // Slack lists the token's scopes with every answer.
    const scopeHeader: Record<string, string> = given === token ? { 'x-oauth-scopes': scopes.join(',') } : {};
    const ok = (fields: Record<string, unknown> = {}) => sendJson(response, 200, { ok: true, ...fields }, scopeHeader);
    const fail = (error: string) => sendJson(response, 200, { ok: false, error }, scopeHeader);
    if (given !== token) return fail('invalid_auth');
    switch (method) {
      case 'auth.test':
        await authTestHolds.shift()?.hold();
        return ok({ url: 'https://acme.slack.test/', team: 'Acme', user: 'approvals', team_id: 'T0ACME', user_id: 'U0BOT' });
      case 'chat.postMessage': {
        if (!knownChannels.has(args.channel)) return fail('channel_not_found');
        // Slack's ts: the epoch second it was posted at, and a sequence within it.
        const ts = `${Math.floor(Date.now() / 1000)}.${String(++sequence).padStart(6, '0')}`;
        const metadata = args.metadata;
        messages.set(ts, {
          channel: args.channel,
          ts,
          text: args.text,
          blocks: args.blocks ?? [],
          ...(metadata && { metadata }),
        });
        await holds.shift()?.hold();
        return ok({ channel: args.channel, ts, message: { text: args.text } });
      }
      case 'chat.update': {
        await updateHolds.shift()?.hold();
        const message = messages.get(args.ts);
        if (!message || message.channel !== args.channel) return fail('message_not_found');
        // Metadata left out of an update is kept.
        Object.assign(message, { text: args.text, blocks: args.blocks ?? [] }, args.metadata && { metadata: args.metadata });
        return ok({ channel: args.channel, ts: args.ts });
      }
      case 'conversations.history': {
        if (!scopes.includes('channels:history')) return fail('missing_scope');
        if (!knownChannels.has(args.channel)) return fail('channel_not_found');
        const withMetadata = String(args.include_all_metadata) === 'true';
        // Newest first; `oldest` excluded (inclusive defaults to false); pages of `limit` by cursor.
        const all = [...messages.values()]
          .filter((message) => message.channel === args.channel && (!args.oldest || message.ts > String(args.oldest)))
          .sort((a, b) => (a.ts < b.ts ? 1 : -1));
        const start = Number(args.cursor ?? 0);
        const limit = Number(args.limit ?? 100);
        const page = all.slice(start, start + limit);
        const more = start + limit < all.length;
        return ok({
          messages: page.map(({ ts, text, metadata }) => ({
            type: 'message',
            bot_id: 'B0BOT',
            ts,
            text,
            ...(withMetadata && metadata && { metadata }),
          })),
          has_more: more,
          response_metadata: { next_cursor: more ? String(start + limit) : '' },
        });
      }
      case 'chat.postEphemeral':
        return knownChannels.has(args.channel) ? ok({ message_ts: `${Date.now() / 1000}` }) : fail('channel_not_found');
      case 'users.info': {
        const user = users.find((candidate) => candidate.id === args.user);
        return user ? ok({ user: { id: user.id, profile: { email: user.email ?? undefined } } }) : fail('user_not_found');
      }
      case 'users.lookupByEmail': {
        const user = users.find((candidate) => candidate.email === args.email);
        return user ? ok({ user: { id: user.id, profile: { email: user.email } } }) : fail('users_not_found');
      }
      case 'views.open': {
        const trigger = triggers.get(args.trigger_id);
        if (!trigger) return fail('invalid_trigger_id');
        if (trigger.used) return fail('exchanged_trigger_id');
        if (Date.now() - trigger.issuedAt > 3000) return fail('expired_trigger_id');
        if (!args.view || viewProblem(args.view) !== undefined) return fail('invalid_arguments');
        trigger.used = true;
        return ok({ view: { id: `V${++sequence}`, ...args.view } });
      }
      default:
        return fail('unknown_method');
    }
  });

  return {
    url: `${server.url}/api/`,
    token,
    calls,
    messages,
    /** A workspace user; with an email that is a member's, they are that member to the service. */
    addUser(email: string | null): FakeSlackUser {
      const user = { id: `U${randomBytes(4).toString('hex').toUpperCase()}`, email };
      users.push(user);
      return user;
    },
    callsOf: (method: string) => calls.filter((call) => call.method === method),
    /** The app reinstalled with these bot scopes. */
    grantScopes(granted: string[]) {
      scopes = granted;
    },
    /** A trigger id as Slack puts in an interaction's payload: it opens one modal within 3 seconds. */
    issueTrigger() {
      const id = `${++sequence}.${randomBytes(6).toString('hex')}`;
      triggers.set(id, { issuedAt: Date.now(), used: false });
      return id;
    },
    /** The next chat.postMessage posts its message, then waits for `release` to answer. */
    holdNextPost() {
      const answer = answerHold();
      holds.push(answer);
      return answer.control;
    },
    /** The next chat.update waits for `release`, then changes its message and answers. */
    holdNextUpdate() {
      const answer = answerHold();
      updateHolds.push(answer);
      return answer.control;
    },
    /** The next auth.test waits for `release` to answer. */
    holdNextAuthTest() {
      const answer = answerHold();
      authTestHolds.push(answer);
      return answer.control;
    },
    close: server.close,
  };
}

export type FakeSlack = Awaited<ReturnType<typeof startFakeSlack>>;

/**
 * Posts an interaction as Slack does: form-encoded `payload=<json>`, with `X-Slack-Request-Timestamp`
 * and `X-Slack-Signature: v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{body}` under the signing secret.
 */
export function postInteraction(
  url: string,
  signingSecret: string,
  payload: unknown,
  options: { timestamp?: number; body?: string; signature?: string } = {},
): Promise<Response> {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const body = options.body ?? new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const signature =
    options.signature ?? `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': signature,
    },
    body,
  });
}
