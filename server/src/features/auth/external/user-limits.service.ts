import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../../db/schema.ts';
import type { Clock } from '../../../lib/clock.ts';
import type { SecretBox } from '../../../lib/crypto.ts';
import type { ExternalAuthRegistry, UserLimits } from './registry.ts';
import { userLimitsRepo } from './user-limits.repo.ts';

/** A user's limits as /auth/me shows them. */
export interface UserLimitsStatus {
  maxMessages: number | null;
  resetDate: Date | null;
  usedMessages: number;
}

/** The window a reset date names; without one, the limit is for all time. */
const windowKeyOf = (limits: UserLimits) => limits.resetDate?.toISOString() ?? 'all-time';

/**
 * Limits that an external auth provider sets on its users' model messages (getUserLimits).
 * Read with the user's stored token, cached briefly per user; a provider that throws or does not
 * answer in time sets no limit (logged): a flaky provider must not stop every action.
 */
export function createUserLimitsService(deps: {
  db: Kysely<DB>;
  registry: ExternalAuthRegistry;
  box: SecretBox;
  clock: Clock;
  logger: Logger;
  cacheTtlMs: number;
  providerTimeoutMs: number;
}) {
  const cache = new Map<string, { until: number; limits: Promise<UserLimits | null> }>();

  async function fetchLimits(userId: string): Promise<UserLimits | null> {
    const user = await userLimitsRepo.externalIdentity(deps.db, userId);
    const provider = user?.externalProvider ? deps.registry.getExternalAuthProvider(user.externalProvider) : undefined;
    if (!user?.externalUserId || !user.externalTokenEncrypted || !provider?.getUserLimits) return null;
    try {
      const token = deps.box.decrypt(user.externalTokenEncrypted);
      const limits = await Promise.race([
        provider.getUserLimits(user.externalUserId, token),
        new Promise<never>((_, reject) =>
          setTimeout(() => reject(new Error(`no answer within ${deps.providerTimeoutMs} ms`)), deps.providerTimeoutMs).unref(),
        ),
      ]);
      const maxMessages =
        typeof limits?.maxMessages === 'number' && Number.isFinite(limits.maxMessages)
          ? Math.max(0, Math.floor(limits.maxMessages))
          : undefined;
      const resetDate =
        limits?.resetDate instanceof Date && !Number.isNaN(limits.resetDate.getTime()) ? limits.resetDate : undefined;
      return { maxMessages, resetDate };
    } catch (error) {
      deps.logger.warn({ err: error, userId, provider: provider.name }, 'getUserLimits failed; no limit applied');
      return null;
    }
  }

  /** The user's limits (null: none), from the cache while it is fresh. */
  function limitsOf(userId: string): Promise<UserLimits | null> {
    const now = deps.clock.now().getTime();
    const cached = cache.get(userId);
    if (cached && cached.until > now) return cached.limits;
    const limits = fetchLimits(userId);
    cache.set(userId, { until: now + deps.cacheTtlMs, limits });
    limits.catch(() => cache.delete(userId)); // a database error is not kept
    if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
    return limits;
  }

  /** Limits that apply now: a max, within a window that has not passed. */
  async function activeLimits(userId: string): Promise<(UserLimits & { maxMessages: number }) | null> {
    const limits = await limitsOf(userId);
    if (limits?.maxMessages === undefined) return null;
    if (limits.resetDate && limits.resetDate.getTime() <= deps.clock.now().getTime()) return null; // reset already: a new window
    return limits as UserLimits & { maxMessages: number };
  }

  return {
    /**
     * Takes one of the user's model messages, atomically (runs in any process count against one
     * another), or says why not (`user_limit_reached: ...`).
     */
    async take(userId: string): Promise<string | undefined> {
      const limits = await activeLimits(userId);
      if (!limits) return undefined;
      const window = windowKeyOf(limits);
      if (limits.maxMessages > 0 && (await userLimitsRepo.take(deps.db, userId, window, limits.maxMessages))) return undefined;
      const used = await userLimitsRepo.used(deps.db, userId, window);
      const until = limits.resetDate ? `until ${limits.resetDate.toISOString()}` : 'with no reset date';
      return `user_limit_reached: the run-as user has used ${used} of ${limits.maxMessages} model messages ${until}`;
    },

    /** Gives a message taken back: its model call failed. */
    async giveBack(userId: string): Promise<void> {
      const limits = await activeLimits(userId);
      if (limits) await userLimitsRepo.giveBack(deps.db, userId, windowKeyOf(limits));
    },

    /** The user's limits and use, or null when no limit applies. */
    async status(userId: string): Promise<UserLimitsStatus | null> {
      const limits = await activeLimits(userId);
      if (!limits) return null;
      return {
        maxMessages: limits.maxMessages,
        resetDate: limits.resetDate ?? null,
        usedMessages: await userLimitsRepo.used(deps.db, userId, windowKeyOf(limits)),
      };
    },
  };
}

export type UserLimitsService = ReturnType<typeof createUserLimitsService>;
