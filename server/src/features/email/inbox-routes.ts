import type { Kysely } from 'kysely';
import type { DB } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { BUS_TOPICS, INVALIDATE_ALL, type ProcessBus } from '../../lib/process-bus.ts';
import { createReloadingCache } from '../../lib/reloading-cache.ts';
import { notificationsRepo } from './notifications.repo.ts';

/** The org that may have sent a notification to an inbox, with the secret (decrypted) that proves it. */
export interface InboxRoute {
  orgId: string;
  webhookSecret: string;
}

/** The bus's keys: an inbox changed (by its address), or an org's integration (its webhook secret, or whether it has one). */
const INBOX = 'inbox ';
const INTEGRATION = 'org ';

/** Tells every process that an inbox or an org's integration changed (called by the inboxes and integration services). */
export const inboxRoutesChanged = {
  inbox: (bus: Pick<ProcessBus, 'publish'>, address: string) => bus.publish(BUS_TOPICS.inboxRoutes, INBOX + address),
  integration: (bus: Pick<ProcessBus, 'publish'>, orgId: string) => bus.publish(BUS_TOPICS.inboxRoutes, INTEGRATION + orgId),
};

/**
 * The org of each inbox address, for the mail intake: every acknowledgement would read it, so it is
 * kept (lib/reloading-cache.ts) and dropped in every process when an inbox or an integration changes.
 * An address without an inbox (or whose org has no integration) is kept as such, briefly.
 */
export function createInboxRoutes(deps: { db: Kysely<DB>; box: SecretBox; bus: ProcessBus; clock: Clock; ttlMs?: number }) {
  const cache = createReloadingCache<InboxRoute>({ clock: deps.clock, ttlMs: deps.ttlMs ?? 30_000 });
  deps.bus.subscribe(BUS_TOPICS.inboxRoutes, (key) => {
    if (key === INVALIDATE_ALL) cache.invalidate(INVALIDATE_ALL);
    else if (key.startsWith(INBOX)) cache.invalidate(key.slice(INBOX.length));
    // An integration's org is in the values, not the keys, and an address whose org had none is kept
    // without one: every route of that org goes, and every address known to have none.
    else if (key.startsWith(INTEGRATION)) {
      const orgId = key.slice(INTEGRATION.length);
      cache.invalidate(key, (_address, route) => route === null || route.orgId === orgId);
    }
  });

  return {
    /** The distinct orgs with an inbox at one of these addresses and an integration to verify with. */
    async orgsOf(addresses: string[]): Promise<InboxRoute[]> {
      if (addresses.length === 0) return [];
      const routes = await cache.getMany(addresses, async (missing) => {
        const rows = await notificationsRepo.inboxOrgs(deps.db, missing);
        return new Map(
          rows.map((row) => [
            row.emailAddress,
            { orgId: row.orgId, webhookSecret: deps.box.decrypt(row.webhookSecretEncrypted) },
          ]),
        );
      });
      const byOrg = new Map<string, InboxRoute>();
      for (const route of routes.values()) if (route) byOrg.set(route.orgId, route);
      return [...byOrg.values()];
    },
  };
}

export type InboxRoutes = ReturnType<typeof createInboxRoutes>;
