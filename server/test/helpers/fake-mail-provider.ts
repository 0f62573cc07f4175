import type { ServerResponse } from 'node:http';
import { sendJson, startLoopbackServer } from './http.ts';

export interface SentEmail {
  from: string;
  to: string[];
  subject: string;
  text?: string;
  html?: string;
  idempotencyKey?: string;
}

export interface FakeDomain {
  name: string;
  status?: 'verified' | 'pending' | 'failed' | 'not_started';
  receiving?: boolean;
}

interface FakeAccount {
  /** A sending-only key: the provider refuses it everything but POST /emails. */
  restricted: boolean;
  domains: FakeDomain[];
}

/** Resend's error body. */
const refuse = (response: ServerResponse, status: number, name: string, message: string, headers: Record<string, string> = {}) =>
  sendJson(response, status, { statusCode: status, message, name }, headers);

/**
 * Plays the `mail` provider (Resend's API, shapes from its docs) on loopback: POST /emails and
 * GET /domains, per API key, with its error bodies; `failNextRequests` makes the next answers fail.
 */
export async function startFakeMailProvider(apiKey = 're_test_key') {
  const sent: SentEmail[] = [];
  const waiters: Array<{ match: (email: SentEmail) => boolean; resolve: (email: SentEmail) => void }> = [];
  const accounts = new Map<string, FakeAccount>([[apiKey, { restricted: false, domains: [] }]]);
  const failures: Array<{ status: number; headers: Record<string, string> }> = [];
  const requests: Array<{ method: string; url: string; userAgent?: string }> = [];
  const server = await startLoopbackServer((request, response, body) => {
    requests.push({ method: request.method!, url: request.url!, userAgent: request.headers['user-agent'] });
    const authorization = request.headers.authorization;
    if (!authorization?.startsWith('Bearer '))
      return refuse(response, 401, 'missing_api_key', 'Missing API key in the authorization header');
    const account = accounts.get(authorization.slice('Bearer '.length));
    if (!account) return refuse(response, 403, 'invalid_api_key', 'API key is invalid');
    const failure = failures.shift();
    if (failure)
      return refuse(
        response,
        failure.status,
        failure.status === 429 ? 'rate_limit_exceeded' : 'application_error',
        'temporary failure',
        failure.headers,
      );
    if (request.method === 'GET' && request.url === '/domains') {
      if (account.restricted) return refuse(response, 401, 'restricted_api_key', 'This API key is restricted to only send emails');
      return sendJson(response, 200, {
        object: 'list',
        has_more: false,
        data: account.domains.map((domain, index) => ({
          id: `d-${index}`,
          name: domain.name,
          status: domain.status ?? 'verified',
          created_at: new Date(0).toISOString(),
          region: 'us-east-1',
          capabilities: { sending: 'enabled', receiving: domain.receiving === false ? 'disabled' : 'enabled' },
        })),
      });
    }
    if (request.method !== 'POST' || request.url !== '/emails') return refuse(response, 404, 'not_found', 'Route not found');
    const email = { ...(JSON.parse(body) as SentEmail), idempotencyKey: request.headers['idempotency-key'] as string | undefined };
    sent.push(email);
    for (const waiter of waiters.filter((w) => w.match(email))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(email);
    }
    sendJson(response, 200, { id: crypto.randomUUID() });
  });
  return {
    url: server.url,
    apiKey,
    sent,
    requests,
    /** Another API key of the account, with its domains (or a sending-only key). */
    addKey(key: string, account: { restricted?: boolean; domains?: FakeDomain[] } = {}) {
      accounts.set(key, { restricted: account.restricted ?? false, domains: account.domains ?? [] });
    },
    /** The next `count` requests fail with `status` (500 by default; 429 with these headers, e.g. retry-after). */
    failNextRequests: (count: number, status = 500, headers: Record<string, string> = {}) => {
      for (let index = 0; index < count; index++) failures.push({ status, headers });
    },
    /** The first email to `to` (already sent or yet to come). */
    waitFor(to: string, timeoutMs = 10_000): Promise<SentEmail> {
      const match = (email: SentEmail) => email.to.includes(to);
      const already = sent.find(match);
      if (already) return Promise.resolve(already);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`No email to ${to} within ${timeoutMs} ms`)), timeoutMs);
        waiters.push({
          match,
          resolve: (email) => {
            clearTimeout(timer);
            resolve(email);
          },
        });
      });
    },
    close: server.close,
  };
}
