import type { CallbackDeliveryStatus } from '../../db/schema.ts';

/** How an attempt ended, and what happens next. */
export interface AttemptVerdict {
  status: Extract<CallbackDeliveryStatus, 'succeeded' | 'pending' | 'failed' | 'dead_lettered'>;
  /** When pending: how long until the next attempt. */
  delayMs: number | null;
  /** 410 Gone: the receiver asks us to stop; its endpoint is disabled. */
  gone: boolean;
}

/** Retry-After as milliseconds from now: delta-seconds or an HTTP date (RFC 9110 10.2.3). */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - nowMs);
}

/**
 * Only 2xx is success. 410 stops for good. Anything else (another status, a network error, the
 * deadline) is retried on the schedule: `scheduleMs[n - 1]` after the n-th attempt, with +-20%
 * jitter so that many failed deliveries do not all come back at once. Retry-After is honoured within
 * [scheduled, 2 x scheduled]: a receiver can slow us down, not speed us up or stall us for days.
 */
export function judgeAttempt(
  attempt: { statusCode: number | null; retryAfter?: string; attemptCount: number; attemptedAt: Date },
  scheduleMs: readonly number[],
  random: () => number = Math.random,
): AttemptVerdict {
  const { statusCode } = attempt;
  if (statusCode !== null && statusCode >= 200 && statusCode < 300) return { status: 'succeeded', delayMs: null, gone: false };
  if (statusCode === 410) return { status: 'failed', delayMs: null, gone: true };
  const base = scheduleMs[attempt.attemptCount - 1];
  if (base === undefined) return { status: 'dead_lettered', delayMs: null, gone: false };
  const jittered = Math.round(base * (0.8 + 0.4 * random()));
  const asked = parseRetryAfter(attempt.retryAfter, attempt.attemptedAt.getTime());
  const delayMs = asked === null ? jittered : Math.max(jittered, Math.min(asked, 2 * base));
  return { status: 'pending', delayMs, gone: false };
}
