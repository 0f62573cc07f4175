import { BlockList, isIP } from 'node:net';
import type { Kysely } from 'kysely';
import type { ActionRuleRow, DB, WebhookRow } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { BUS_TOPICS, type ProcessBus } from '../../lib/process-bus.ts';
import { createReloadingCache } from '../../lib/reloading-cache.ts';
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
 * Webhook configs and action rules cached for ingest (a few seconds at most, lib/reloading-cache.ts),
 * dropped at once in every process when the console changes them. Unknown identifiers are cached
 * too, briefly, so a flood of bad URLs costs no queries.
 */
export function createIngestCache(deps: { db: Kysely<DB>; box: SecretBox; bus: ProcessBus; clock: Clock; ttlMs?: number }) {
  const createCache = <T>() => createReloadingCache<T>({ clock: deps.clock, ttlMs: deps.ttlMs ?? 30_000 });
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
