import type { IncomingHttpHeaders } from 'node:http';
import { startLoopbackServer } from './http.ts';

export interface ReceivedCallback {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The parsed body. */
  event: { type: string; timestamp: string; data: Record<string, any> };
  receivedAt: number;
  /** The status the receiver answered with. */
  status?: number;
}

export interface ReceiverAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

/**
 * A customer's callback receiver on loopback: records every request and answers as the test says
 * (200 by default), per request.
 */
export async function startCallbackReceiver() {
  const received: ReceivedCallback[] = [];
  let answer: (callback: ReceivedCallback) => ReceiverAnswer = () => ({});
  const server = await startLoopbackServer(async (request, response, body) => {
    let event: ReceivedCallback['event'];
    try {
      event = JSON.parse(body);
    } catch {
      event = { type: '(not JSON)', timestamp: '', data: {} };
    }
    const callback: ReceivedCallback = {
      path: request.url ?? '/',
      headers: request.headers,
      body,
      event,
      receivedAt: Date.now(),
    };
    received.push(callback);
    const reply = answer(callback);
    callback.status = reply.status ?? 200;
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (response.destroyed) return;
    response.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers });
    response.end(reply.body ?? 'ok');
  });
  return {
    url: (path = '/callbacks') => `${server.url}${path}`,
    received,
    /** Callbacks about one action, in the order they arrived. */
    forAction: (actionId: string) => received.filter((callback) => callback.event.data?.actionId === actionId),
    answer(fn: (callback: ReceivedCallback) => ReceiverAnswer) {
      answer = fn;
    },
    close: server.close,
  };
}
