import { BlockList, isIP } from 'node:net';
import type { Kysely } from 'kysely';
import type { ActionRuleRow, DB, WebhookRow } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { INVALIDATE_ALL, type InvalidationBus } from '../../lib/invalidation-bus.ts';
import { actionRulesRepo } from '../agents/agents.repo.ts';
import { orgsRepo } from '../orgs/orgs.repo.ts';
import { ACTION_RULE_TOPIC } from '../agents/agents.service.ts';
import { eventFilterMatcher } from './payload.ts';
import { WEBHOOK_TOPIC } from './webhooks.service.ts';
import { webhooksRepo } from './webhooks.repo.ts';

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
 */
export function createIngestCache(deps: { db: Kysely<DB>; box: SecretBox; bus: InvalidationBus; clock: Clock; ttlMs?: number }) {
  const ttlMs = deps.ttlMs ?? 30_000;
  const webhooks = new Map<string, { value: IngestWebhook | null; freshUntil: number }>();
  const rules = new Map<string, { value: ActionRuleRow | null; freshUntil: number }>();
  const members = new Map<string, { value: true | null; freshUntil: number }>();
  let generation = 0;
  const onInvalidate = (cache: Map<string, unknown>) => (key: string) => {
    generation++;
    if (key === INVALIDATE_ALL) cache.clear();
    else cache.delete(key);
  };
  deps.bus.subscribe(WEBHOOK_TOPIC, onInvalidate(webhooks));
  deps.bus.subscribe(ACTION_RULE_TOPIC, onInvalidate(rules));

  async function cached<T>(cache: Map<string, { value: T | null; freshUntil: number }>, key: string, load: () => Promise<T | null>): Promise<T | null> {
    const hit = cache.get(key);
    if (hit && hit.freshUntil > performance.now()) return hit.value;
    const startedAt = generation;
    const value = await load();
    if (generation === startedAt) {
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
      cache.set(key, { value, freshUntil: performance.now() + (value ? ttlMs : Math.min(ttlMs, 5_000)) });
    }
    return value;
  }

  return {
    webhook: (identifier: string) =>
      cached(webhooks, identifier, async () => {
        const row = await webhooksRepo.findForIngest(deps.db, identifier);
        if (!row) return null;
        const { orgSlug, ...webhook } = row;
        return {
          row: webhook,
          orgSlug,
          secret: deps.box.decrypt(webhook.secretEncrypted),
          previousSecret: webhook.previousSecretEncrypted && webhook.previousSecretExpiresAt
            ? { secret: deps.box.decrypt(webhook.previousSecretEncrypted), expiresAt: webhook.previousSecretExpiresAt }
            : null,
          blockList: blockListOf(webhook.blockedIps),
          allowedOrigins: new Set(webhook.allowedOrigins),
          matchesEvent: eventFilterMatcher(webhook.eventFilter),
        };
      }),

    rule: (orgId: string, ruleId: string) => cached(rules, ruleId, async () => (await actionRulesRepo.find(deps.db, orgId, ruleId)) ?? null).then((rule) => (rule?.orgId === orgId ? rule : null)),

    /** Org membership of a run-as user; a change shows within the cache's lifetime. */
    isMember: async (orgId: string, userId: string) =>
      (await cached(members, `${orgId} ${userId}`, async () => ((await orgsRepo.isMember(deps.db, orgId, userId)) ? true : null))) === true,

    /** The secrets that verify now: the current one, and the previous one during its grace period. */
    secretsOf(webhook: IngestWebhook): string[] {
      const previous = webhook.previousSecret;
      return previous && previous.expiresAt > deps.clock.now() ? [webhook.secret, previous.secret] : [webhook.secret];
    },
  };
}

export type IngestCache = ReturnType<typeof createIngestCache>;
