import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import { type GuardedHttpClient, postOnce } from '../../lib/http-client.ts';
import { BUS_TOPICS, type ProcessBus } from '../../lib/process-bus.ts';
import type { Metrics } from '../../lib/metrics.ts';
import { callbackEndpointsRepo } from './callbacks.repo.ts';
import { claimLeaseMs, dispatchRepo, type AttemptRecord, type ClaimedCallback } from './dispatch.repo.ts';
import { LAST_CALLBACK_EVENTS } from './outbox.ts';
import { judgeAttempt } from './retry-policy.ts';
import { createSecretCache, signedHeaders } from './signing.ts';
import type { Clock } from '../../lib/clock.ts';
import { SpanKind, type Tracing } from '../../lib/tracing.ts';

/** A URL's host, as a span may show it. */
const hostOf = (url: string) => {
  try {
    return new URL(url).hostname;
  } catch {
    return '';
  }
};

const KEEP_RESPONSE_BYTES = 1024;
const MAX_CLAIM = 200;
/** Attempts in flight to one endpoint at most: a slow receiver cannot take every slot from the others. */
const PER_ENDPOINT_IN_FLIGHT = 50;
const FAILING_DAYS_BEFORE_DISABLE = 5;
/**
 * Finished attempts are recorded this long after the first of them (or at once when this many wait):
 * at a moderate rate, a statement for each handful of attempts cost PostgreSQL twice the CPU per
 * delivery of the batches at capacity. The receipt does not wait for it; the action's next callback
 * to the same endpoint, and a slot held in flight, wait at most this long.
 */
const GATHER_MS = 10;
const GATHER_ATTEMPTS = 200;

/** What a receiver answered an attempt, or why there is no answer (`error`, without a status code). */
interface Answer {
  statusCode: number | null;
  retryAfter: string | undefined;
  error: string | null;
  responseBody: string | null;
}

export interface DispatcherOptions {
  concurrency: number;
  timeoutMs: number;
  retryScheduleMs: readonly number[];
  /** Due retries are looked for this often; new callbacks come with a wake-up and do not wait for it. */
  pollMs?: number;
}

/**
 * Sends the outbox: claims due callbacks (in order per action and endpoint), signs and POSTs each
 * with a deadline and no redirects, and records the attempts in batches. It wakes up when a
 * transition commits (a signal on the bus, from this process or, by NOTIFY, another), and polls
 * for retries that come due. Several dispatchers (processes) can run at once: claims skip each other's.
 */
export function createCallbackDispatcher(deps: {
  db: Kysely<DB>;
  decrypt: (encrypted: string) => string;
  clock: Clock;
  bus: ProcessBus;
  httpClient: GuardedHttpClient;
  metrics: Metrics;
  tracing: Pick<Tracing, 'start' | 'traceparent' | 'fail'>;
  logger: Logger;
  options: DispatcherOptions;
}) {
  const { db, options } = deps;
  const secretOf = createSecretCache(deps.decrypt);
  const leaseMs = claimLeaseMs(options.timeoutMs);
  const finished: AttemptRecord[] = [];
  /** Endpoints that answered 410 since the last flush: disabled with it. */
  const goneEndpoints = new Set<string>();
  let running = false;
  let inFlight = 0;
  const inFlightByEndpoint = new Map<string, number>();
  let claiming = false;
  let claimAgain = false;
  let flushing: Promise<void> | undefined;
  let poll: NodeJS.Timeout | undefined;
  let gathering: NodeJS.Timeout | undefined;
  /** A claim was cut short (no room, or endpoints with enough in flight): recording frees slots for another. */
  let claimCutShort = false;
  /** Finished attempts that ended a callback its action's next one to the same endpoint waits for (ids). */
  const opensNext = new Set<string>();
  const idle: Array<() => void> = [];

  /** Claims while there is room and work; a wake-up during a claim makes it claim once more after. */
  async function pump(): Promise<void> {
    if (!running) return;
    if (claiming) {
      claimAgain = true;
      return;
    }
    claiming = true;
    try {
      do {
        claimAgain = false;
        const room = Math.min(options.concurrency - inFlight, MAX_CLAIM);
        if (room <= 0) {
          claimCutShort = true;
          break;
        }
        const busy = [...inFlightByEndpoint].filter(([, count]) => count >= PER_ENDPOINT_IN_FLIGHT).map(([id]) => id);
        if (busy.length > 0) claimCutShort = true;
        const claimed = await dispatchRepo.claimDue(db, room, leaseMs, busy);
        inFlight += claimed.length;
        for (const { endpointId } of claimed) inFlightByEndpoint.set(endpointId, (inFlightByEndpoint.get(endpointId) ?? 0) + 1);
        for (const callback of claimed) void attempt(callback);
        if (claimed.length === room) claimAgain = true;
      } while (claimAgain && running);
    } catch (error) {
      deps.logger.error({ err: error }, 'callback dispatcher could not claim callbacks');
    } finally {
      claiming = false;
    }
  }

  /** Signs and POSTs the callback once: what the receiver answered, or why there is no answer. */
  async function post(callback: ClaimedCallback, attemptedAt: Date, traceparent: string | null | undefined): Promise<Answer> {
    const secrets = [secretOf(callback.secretEncrypted)];
    if (callback.previousSecretEncrypted && callback.previousSecretExpiresAt && callback.previousSecretExpiresAt > attemptedAt) {
      secrets.push(secretOf(callback.previousSecretEncrypted));
    }
    try {
      const response = await postOnce(deps.httpClient, callback.url, {
        headers: {
          'content-type': 'application/json',
          'user-agent': 'AgentPlatform-Callbacks/1',
          ...signedHeaders(callback.id, attemptedAt, callback.body, secrets),
          ...(traceparent && { traceparent }),
        },
        body: callback.body,
        timeoutMs: options.timeoutMs,
        keepBodyBytes: KEEP_RESPONSE_BYTES,
      });
      const { status, headers } = response;
      const error =
        status >= 300 && status < 400
          ? `redirect to ${headers.location ?? '(no location)'} not followed`
          : status < 200 || status >= 300
            ? `HTTP ${status}`
            : null;
      const retryAfter = typeof headers['retry-after'] === 'string' ? headers['retry-after'] : undefined;
      return { statusCode: status, retryAfter, error, responseBody: response.body };
    } catch (cause) {
      return { statusCode: null, retryAfter: undefined, error: (cause as Error).message || String(cause), responseBody: null };
    }
  }

  async function attempt(callback: ClaimedCallback): Promise<void> {
    const attemptedAt = deps.clock.now();
    const started = performance.now();
    // The attempt joins its action's trace; the receiver may continue it (traceparent). Only the host is
    // recorded: a callback URL's path or query may be a secret (a Slack-style hook).
    const span = deps.tracing.start(`callback ${callback.eventType}`, callback.traceParent, {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST',
        'server.address': hostOf(callback.url),
        'agent_platform.callback.id': callback.id,
        'agent_platform.callback.endpoint_id': callback.endpointId,
        'agent_platform.callback.attempt': callback.attemptCount,
      },
    });
    const { statusCode, retryAfter, error, responseBody } = await post(callback, attemptedAt, deps.tracing.traceparent(span));
    const verdict = judgeAttempt(
      { statusCode, retryAfter, attemptCount: callback.attemptCount, attemptedAt },
      options.retryScheduleMs,
    );
    deps.metrics.callbackAttempts.inc({ outcome: verdict.status });
    if (statusCode !== null) span.setAttribute('http.response.status_code', statusCode);
    span.setAttribute('agent_platform.callback.outcome', verdict.status);
    if (error) deps.tracing.fail(span, new Error(error));
    span.end();
    finished.push({
      deliveryId: callback.id,
      endpointId: callback.endpointId,
      attemptedAt,
      durationMs: Math.round(performance.now() - started),
      statusCode,
      error,
      responseBody,
      status: verdict.status,
      delayMs: verdict.delayMs,
    });
    if (verdict.gone) goneEndpoints.add(callback.endpointId);
    if (verdict.status !== 'pending' && !LAST_CALLBACK_EVENTS.has(callback.eventType)) opensNext.add(callback.id);
    if (finished.length >= GATHER_ATTEMPTS || !running) flush();
    else flushSoon();
  }

  function flushSoon(): void {
    gathering ??= setTimeout(() => {
      gathering = undefined;
      flush();
    }, GATHER_MS);
  }

  /**
   * Writes finished attempts, many per statement (those that finish meanwhile gather for the next,
   * unless there are enough already); then claims again if that may find more.
   */
  function flush(): void {
    if (flushing || finished.length === 0) return;
    flushing = (async () => {
      let claimAfter = false;
      do {
        clearTimeout(gathering);
        gathering = undefined;
        const batch = finished.splice(0, 500);
        for (const { deliveryId } of batch) if (opensNext.delete(deliveryId)) claimAfter = true;
        try {
          const failing = await dispatchRepo.record(db, batch, FAILING_DAYS_BEFORE_DISABLE * 86_400_000);
          await callbackEndpointsRepo.disable(db, failing, `failing for ${FAILING_DAYS_BEFORE_DISABLE} days`);
          const gone = [...goneEndpoints];
          goneEndpoints.clear();
          await callbackEndpointsRepo.disable(db, gone, 'the receiver answered 410 Gone');
        } catch (error) {
          // The callbacks stay leased; once the lease lapses they are sent again (at least once).
          deps.logger.error({ err: error, callbacks: batch.length }, 'callback attempts could not be recorded');
        }
        inFlight -= batch.length;
        for (const { endpointId } of batch) {
          const left = inFlightByEndpoint.get(endpointId)! - 1;
          if (left === 0) inFlightByEndpoint.delete(endpointId);
          else inFlightByEndpoint.set(endpointId, left);
        }
      } while (finished.length >= GATHER_ATTEMPTS || (!running && finished.length > 0));
      if (claimCutShort) claimAfter = true;
      claimCutShort = false;
      return claimAfter;
    })().then((claimAfter) => {
      flushing = undefined;
      if (finished.length > 0) flushSoon();
      else if (inFlight === 0) for (const resolve of idle.splice(0)) resolve();
      if (claimAfter) void pump();
    });
  }

  // This process takes the callbacks when it has room for more (ProcessBus.subscribe).
  deps.bus.subscribe(BUS_TOPICS.callbacks, () => {
    const takes = running && inFlight < options.concurrency;
    void pump();
    return takes;
  });

  return {
    start(): void {
      if (running) return;
      running = true;
      poll = setInterval(() => void pump(), options.pollMs ?? 1000);
      poll.unref();
      void pump();
    },
    /** Stops claiming; waits (at most the attempt deadline) for attempts in flight to be recorded. */
    async stop(): Promise<void> {
      running = false;
      clearInterval(poll);
      if (gathering) flush();
      if (inFlight === 0 && !flushing) return;
      await Promise.race([
        new Promise<void>((resolve) => idle.push(resolve)),
        new Promise((resolve) => setTimeout(resolve, options.timeoutMs + 1000).unref()),
      ]);
      await flushing;
    },
  };
}

export type CallbackDispatcher = ReturnType<typeof createCallbackDispatcher>;
