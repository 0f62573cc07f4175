import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from './errors.ts';

export interface RateLimiter {
  /** Counts one request for `key`; throws a 429 AppError (with Retry-After) once the limit is spent. */
  consume(key: string): Promise<void>;
}

export interface RateLimiters {
  create(options: { name: string; points: number; durationSeconds: number }): RateLimiter;
  /** Present when the counters live in Redis: throws unless it answers. */
  ping?: () => Promise<void>;
  close(): Promise<void>;
}

/**
 * Counters live in process memory by default, and in Redis when a URL is given, so that several
 * processes share one budget per key.
 */
export function createRateLimiters(options: { redisUrl?: string }): RateLimiters {
  const redis = options.redisUrl
    ? new Redis(options.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
    : undefined;
  redis?.on('error', () => {});
  return {
    create({ name, points, durationSeconds }) {
      const limiter: RateLimiterAbstract = redis
        ? new RateLimiterRedis({
            storeClient: redis,
            keyPrefix: `rl:${name}`,
            points,
            duration: durationSeconds,
            insuranceLimiter: new RateLimiterMemory({ points, duration: durationSeconds }),
          })
        : new RateLimiterMemory({ keyPrefix: name, points, duration: durationSeconds });
      return {
        async consume(key) {
          try {
            await limiter.consume(key);
          } catch (rejection) {
            if (!(rejection instanceof RateLimiterRes)) throw rejection;
            const retryAfter = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
            throw new AppError('rate_limited', `Too many requests. Try again in ${retryAfter} seconds.`, {
              headers: { 'retry-after': String(retryAfter) },
            });
          }
        },
      };
    },
    ping: redis
      ? async () => {
          await redis.ping();
        }
      : undefined,
    async close() {
      redis?.disconnect();
    },
  };
}
