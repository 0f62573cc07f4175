import { randomUUID } from 'node:crypto';
import { sentNow } from './harness.ts';
import { signingHeaders } from '../../server/src/features/ingest/verification.ts';
import { sendJson, startLoopbackServer } from '../../server/test/helpers/http.ts';
import type { DeployedProcess } from './deployment.ts';

export interface SoakWebhook {
  id: string;
  path: string;
  secret: string;
  endpointId: string;
}

/** One signed event as the sender saw it: every answer it got (a retry of one message keeps its id). */
export interface SentEvent {
  externalId: string;
  messageId: string;
  webhook: SoakWebhook;
  /** The final answer, when one came: status and body. */
  status?: number;
  body?: { actionId?: string; eventId?: string; alreadyExists?: boolean };
}

/** A callback as the customer's receiver saw it, in arrival order. */
export interface Receipt {
  webhookId: string;
  /** The receiver path's last segment: which endpoint (webhook) it was sent for. */
  endpoint: string;
  type: string;
  actionId: string;
  body: string;
  answered: number;
}

/** The customer's callback receiver: answers 500 to a share of the attempts, notes every arrival. */
export async function startReceiver(failShare: number) {
  const receipts: Receipt[] = [];
  const server = await startLoopbackServer((request, response, body) => {
    const endpoint = (request.url ?? '').split('/').pop() ?? '';
    let parsed: { type?: string; data?: { actionId?: string } } = {};
    try {
      parsed = JSON.parse(body);
    } catch {
      // recorded as it came; the checks flag it
    }
    const answered = Math.random() < failShare ? 500 : 200;
    receipts.push({
      webhookId: String(request.headers['webhook-id'] ?? ''),
      endpoint,
      type: parsed.type ?? '',
      actionId: parsed.data?.actionId ?? '',
      body,
      answered,
    });
    sendJson(response, answered, { ok: answered === 200 });
  });
  return { url: server.url, receipts, close: server.close };
}

/**
 * A sender like a customer's system: signs each event (Standard Webhooks), posts it to a serve in
 * turn, and on a refused connection or a 5xx retries the same message (same id, signed anew) on the
 * next serve, as senders retry. Some external ids are sent twice, one after the other or at once.
 */
export function createSender(options: {
  serves: DeployedProcess[];
  webhooks: SoakWebhook[];
  askShare: number;
  twiceShare: number;
  concurrentShare: number;
}) {
  const sent: SentEvent[] = [];
  let turn = 0;
  const nextServe = () => {
    for (let i = 0; i < options.serves.length; i++) {
      const serve = options.serves[turn++ % options.serves.length]!;
      if (serve.up) return serve;
    }
    return options.serves[turn++ % options.serves.length]!;
  };

  async function post(event: SentEvent, body: string): Promise<void> {
    for (let attempt = 0; attempt < 40; attempt++) {
      const serve = nextServe();
      try {
        const response = await fetch(`${serve.url}${event.webhook.path}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...signingHeaders('wh', event.webhook.secret, body, { ...sentNow(), messageId: event.messageId }),
          },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        const answer = (await response.json()) as SentEvent['body'];
        if (response.status < 500) {
          event.status = response.status;
          event.body = answer;
          return;
        }
      } catch {
        // refused or reset (a killed serve): retried below
      }
      await new Promise((resolve) => setTimeout(resolve, 100 + attempt * 50));
    }
  }

  const send = (webhook: SoakWebhook, externalId: string, kind: string) => {
    const event: SentEvent = { externalId, messageId: `msg_${randomUUID().replaceAll('-', '')}`, webhook };
    sent.push(event);
    return post(event, JSON.stringify({ eventType: 'order.created', externalId, data: { kind, key: externalId } }));
  };

  return {
    sent,
    /** One new external id, sent once, twice in turn, or twice at once. */
    async sendOne(): Promise<void> {
      const webhook = options.webhooks[Math.floor(Math.random() * options.webhooks.length)]!;
      const externalId = randomUUID();
      const kind = Math.random() < options.askShare ? 'ask' : 'allow';
      const dice = Math.random();
      if (dice < options.concurrentShare) await Promise.all([send(webhook, externalId, kind), send(webhook, externalId, kind)]);
      else if (dice < options.concurrentShare + options.twiceShare) {
        await send(webhook, externalId, kind);
        await send(webhook, externalId, kind);
      } else await send(webhook, externalId, kind);
    },
  };
}

/** Approves every pending tool call, through whichever serve is up. */
export function createApprover(options: { serves: DeployedProcess[]; token: string; org: string }) {
  let approved = 0;
  const call = async (method: string, path: string) => {
    for (const serve of options.serves.filter((s) => s.up)) {
      try {
        const response = await fetch(`${serve.url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${options.token}`,
            ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
          },
          body: method === 'POST' ? '{}' : undefined,
          signal: AbortSignal.timeout(10_000),
        });
        if (response.status < 500) return { status: response.status, body: (await response.json()) as any };
      } catch {
        // that serve was killed meanwhile: the next one
      }
    }
    return undefined;
  };
  return {
    get approved() {
      return approved;
    },
    /** One sweep: every pending approval, approved; returns how many were pending. */
    async sweep(): Promise<number> {
      const page = await call('GET', `/orgs/${options.org}/approvals?limit=100`);
      const pending = (page?.body?.approvals ?? []) as Array<{ actionId: string; toolCallId: string }>;
      for (const { actionId, toolCallId } of pending) {
        const decision = await call(
          'POST',
          `/orgs/${options.org}/actions/${actionId}/tool-calls/${encodeURIComponent(toolCallId)}/approve`,
        );
        if (decision?.status === 200) approved++;
      }
      return pending.length;
    },
  };
}
