import { sendJson, startLoopbackServer } from './http.ts';

export interface SentEmail {
  from: string;
  to: string[];
  subject: string;
  text?: string;
  html?: string;
  idempotencyKey?: string;
}

/** Plays the `mail` provider's sending API (Resend-compatible POST /emails) on loopback. */
export async function startFakeMailProvider(apiKey = 're_test_key') {
  const sent: SentEmail[] = [];
  const waiters: Array<{ match: (email: SentEmail) => boolean; resolve: (email: SentEmail) => void }> = [];
  let failNext = 0;
  const server = await startLoopbackServer((request, response, body) => {
    if (request.method !== 'POST' || request.url !== '/emails') return sendJson(response, 404, { message: 'not found' });
    if (request.headers.authorization !== `Bearer ${apiKey}`) return sendJson(response, 401, { message: 'API key is invalid' });
    if (failNext > 0) {
      failNext--;
      return sendJson(response, 500, { message: 'temporary failure' });
    }
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
    failNextRequests: (count: number) => {
      failNext = count;
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
