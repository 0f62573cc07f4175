import { BlockList, isIP } from 'node:net';
import type { Kysely } from 'kysely';
import type { ActionRuleRow, DB, WebhookRow } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { BUS_TOPICS, INVALIDATE_ALL, type ProcessBus } from '../../lib/process-bus.ts';
import { actionRulesRepo } from '../agents/agents.repo.ts';
import { orgsRepo } from '../orgs/orgs.repo.ts';
import { eventFilterMatcher } from './payload.ts';
import { ingestRepo } from './ingest.repo.ts';

/** A webhook as ingest needs it, with everything derived once per load rather than per request. */
export interface IngestWebhook {
  row: WebhookRow;
  orgSlug: string;
  secret: string;
  previousSecret: { secret: string; expiresAt: Date } | null;
  blockList: BlockList | null;
  allowedOrigins: ReadonlySet<string>;
  matchesEvent: (eventType: string) => boolean;
}

function blockListOf(entries: string[]): BlockList | null {
  if (entries.length === 0) return null;
  const list = new BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split('/');
    const type = isIP(address!) === 6 ? 'ipv6' : 'ipv4';
    if (bits === undefined) list.addAddress(address!, type);
    else list.addSubnet(address!, Number(bits), type);
  }
  return list;
}

/**
 * Webhook configs and action rules cached for ingest (a few seconds at most), dropped at once in
 * every process when the console changes them. Unknown identifiers are cached too, briefly, so a
 * flood of bad URLs costs no queries.
 *
 * An entry past its lifetime is still answered while one reload of it runs (for at most another
 * lifetime): entries loaded together expire together, and their requests should not all wait on
 * the database at that moment. Concurrent loads of one key share one query.
 */
export function createIngestCache(deps: { db: Kysely<DB>; box: SecretBox; bus: ProcessBus; clock: Clock; ttlMs?: number }) {
  const ttlMs = deps.ttlMs ?? 30_000;
  // Bumped by every invalidation: a load that began before one neither stores nor is shared after it.
  let generation = 0;

  function createCache<T>() {
    const entries = new Map<string, { value: T | null; freshUntil: number; staleUntil: number }>();
    const loads = new Map<string, { generation: number; promise: Promise<T | null> }>();

    function reload(key: string, load: () => Promise<T | null>): Promise<T | null> {
      const running = loads.get(key);
      if (running?.generation === generation) return running.promise;
      const startedAt = generation;
      const promise = load()
        .then((value) => {
          if (generation === startedAt) {
            if (entries.size > 10_000) entries.delete(entries.keys().next().value!);
            const lifetime = value ? ttlMs : Math.min(ttlMs, 5_000);
            const now = deps.clock.now().getTime();
            entries.set(key, { value, freshUntil: now + lifetime, staleUntil: now + 2 * lifetime });
          }
          return value;
        })
        .finally(() => {
          if (loads.get(key)?.promise === promise) loads.delete(key);
        });
      loads.set(key, { generation: startedAt, promise });
      return promise;
    }

    return {
      async get(key: string, load: () => Promise<T | null>): Promise<T | null> {
        const hit = entries.get(key);
        const now = deps.clock.now().getTime();
        if (hit && hit.freshUntil > now) return hit.value;
        const reloaded = reload(key, load);
        if (!hit || hit.staleUntil <= now) return reloaded;
        // A failed reload leaves the entry as it is; a request after its stale time waits for a load.
        reloaded.catch(() => undefined);
        return hit.value;
      },

      /** Drops what a console change made stale: its own key, the keys `isStale` picks, or every one. */
      invalidate(changed: string, isStale?: (key: string) => boolean): void {
        generation++;
        if (changed === INVALIDATE_ALL) entries.clear();
        else if (!isStale) entries.delete(changed);
        else for (const key of entries.keys()) if (isStale(key)) entries.delete(key);
      },
    };
  }

  const webhooks = createCache<IngestWebhook>();
  const rules = createCache<ActionRuleRow>();
  const members = createCache<true>();
  deps.bus.subscribe(BUS_TOPICS.webhook, (identifier) => webhooks.invalidate(identifier));
  // A rule is cached per org that asks for it (a rule id sent by another org must not hide it from
  // its own), so a change to it drops the entry of every org.
  deps.bus.subscribe(BUS_TOPICS.actionRule, (ruleId) => rules.invalidate(ruleId, (key) => key.startsWith(`${ruleId} `)));

  return {
    webhook: (identifier: string) =>
      webhooks.get(identifier, async () => {
        const row = await ingestRepo.findWebhook(deps.db, identifier);
        if (!row) return null;
        const { orgSlug, ...webhook } = row;
        return {
          row: webhook,
          orgSlug,
          secret: deps.box.decrypt(webhook.secretEncrypted),
          previousSecret:
            webhook.previousSecretEncrypted && webhook.previousSecretExpiresAt
              ? { secret: deps.box.decrypt(webhook.previousSecretEncrypted), expiresAt: webhook.previousSecretExpiresAt }
              : null,
          blockList: blockListOf(webhook.blockedIps),
          allowedOrigins: new Set(webhook.allowedOrigins),
          matchesEvent: eventFilterMatcher(webhook.eventFilter),
        };
      }),

    rule: (orgId: string, ruleId: string) =>
      rules.get(`${ruleId} ${orgId}`, async () => (await actionRulesRepo.find(deps.db, orgId, ruleId)) ?? null),

    /** Org membership of a run-as user; a change shows within about the cache's lifetime. */
    isMember: async (orgId: string, userId: string) =>
      (await members.get(`${orgId} ${userId}`, async () => ((await orgsRepo.isMember(deps.db, orgId, userId)) ? true : null))) ===
      true,

    /** The secrets that verify now: the current one, and the previous one during its grace period. */
    secretsOf(webhook: IngestWebhook): string[] {
      const previous = webhook.previousSecret;
      return previous && previous.expiresAt > deps.clock.now() ? [webhook.secret, previous.secret] : [webhook.secret];
    },
  };
}

export type IngestCache = ReturnType<typeof createIngestCache>;
