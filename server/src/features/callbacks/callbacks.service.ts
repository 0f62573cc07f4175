import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { CallbackEndpointRow, DB } from '../../db/schema.ts';
import { newSigningSecret, PREVIOUS_SECRET_GRACE_MS, type SecretBox } from '../../lib/crypto.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { outboundUrlProblem } from '../../lib/address-guard.ts';
import { decodeCursor, encodeCursor } from '../../lib/pagination.ts';
import { callbacksRepo, callbackEndpointsRepo, type ListedCallback } from './callbacks.repo.ts';
import type { CallbackDeliveryStatus } from '../../db/schema.ts';
import type { CallbackEndpointInput, CallbackEndpointPatch, CallbackEvent } from './callbacks.schemas.ts';

const toPublic = (row: CallbackEndpointRow) => ({
  id: row.id,
  webhookId: row.webhookId,
  url: row.url,
  description: row.description,
  events: row.events,
  enabled: row.enabled,
  disabledReason: row.disabledReason,
  disabledAt: row.disabledAt,
  failingSince: row.failingSince,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
});

/** Callback endpoints of an org's action webhooks, and their deliveries (replay, recover). */
export function createCallbacksService(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  clock: { now(): Date };
  allowPrivateNetworks: boolean;
  /** Tells the dispatchers that deliveries are due now. */
  announce: () => void;
}) {
  const { db } = deps;

  async function checkUrl(url: string): Promise<void> {
    const problem = await outboundUrlProblem(url, { allowPrivateNetworks: deps.allowPrivateNetworks });
    if (!problem) return;
    const why = deps.allowPrivateNetworks ? '' : '; callbacks go only to public addresses';
    throw new AppError('validation_failed', `body/url: ${problem}${why}`);
  }

  async function requireEndpoint(orgId: string, webhookId: string, id: string): Promise<CallbackEndpointRow> {
    const endpoint = await callbackEndpointsRepo.find(db, orgId, webhookId, id);
    if (!endpoint) throw notFound('Callback endpoint');
    return endpoint;
  }

  async function withAttempts(rows: ListedCallback[]) {
    const attempts = await callbacksRepo.attemptsOf(
      db,
      rows.map((row) => row.id),
    );
    return rows.map(({ seq: _seq, endpointEnabled: _enabled, ...row }) => ({
      ...row,
      // Written by the outbox (outbox.ts) in this shape.
      payload: row.payload as CallbackEvent,
      nextAttemptAt: row.status === 'pending' ? row.nextAttemptAt : null,
      attempts: attempts.filter((attempt) => attempt.deliveryId === row.id).map(({ deliveryId: _id, ...attempt }) => attempt),
    }));
  }

  return {
    async create(orgId: string, webhookId: string, input: CallbackEndpointInput) {
      if (!(await callbackEndpointsRepo.webhookExists(db, orgId, webhookId))) throw notFound('Webhook');
      await checkUrl(input.url);
      const secret = newSigningSecret();
      const row = await callbackEndpointsRepo.insert(db, {
        id: randomUUID(),
        orgId,
        webhookId,
        url: input.url,
        description: input.description,
        events: JSON.stringify(input.events),
        enabled: input.enabled,
        disabledReason: input.enabled ? null : 'disabled by a user',
        disabledAt: input.enabled ? null : deps.clock.now(),
        secretEncrypted: deps.box.encrypt(secret),
        previousSecretEncrypted: null,
        previousSecretExpiresAt: null,
        failingSince: null,
      });
      return { callback: toPublic(row), secret };
    },

    list: async (orgId: string, webhookId: string) => {
      if (!(await callbackEndpointsRepo.webhookExists(db, orgId, webhookId))) throw notFound('Webhook');
      return (await callbackEndpointsRepo.list(db, orgId, webhookId)).map(toPublic);
    },

    get: async (orgId: string, webhookId: string, id: string) => toPublic(await requireEndpoint(orgId, webhookId, id)),

    async update(orgId: string, webhookId: string, id: string, patch: CallbackEndpointPatch) {
      const current = await requireEndpoint(orgId, webhookId, id);
      if (patch.url !== undefined && patch.url !== current.url) await checkUrl(patch.url);
      const { enabled, events, ...plain } = patch;
      if (enabled === false && current.enabled) await callbackEndpointsRepo.disable(db, [id], 'disabled by a user');
      const row = await callbackEndpointsRepo.update(db, id, {
        ...plain,
        ...(events !== undefined ? { events: JSON.stringify(events) } : {}),
        // Enabling starts afresh: what failed while disabled can be sent again with recover.
        ...(enabled === true && !current.enabled
          ? { enabled: true, disabledReason: null, disabledAt: null, failingSince: null }
          : {}),
      });
      return toPublic(row ?? current);
    },

    async delete(orgId: string, webhookId: string, id: string) {
      if (!(await callbackEndpointsRepo.delete(db, orgId, webhookId, id))) throw notFound('Callback endpoint');
    },

    async rotateSecret(orgId: string, webhookId: string, id: string) {
      const current = await requireEndpoint(orgId, webhookId, id);
      const secret = newSigningSecret();
      const previousSecretExpiresAt = new Date(deps.clock.now().getTime() + PREVIOUS_SECRET_GRACE_MS);
      await callbackEndpointsRepo.update(db, id, {
        secretEncrypted: deps.box.encrypt(secret),
        previousSecretEncrypted: current.secretEncrypted,
        previousSecretExpiresAt,
      });
      return { secret, previousSecretExpiresAt };
    },

    async deliveries(
      orgId: string,
      webhookId: string,
      id: string,
      query: { status?: CallbackDeliveryStatus; limit: number; cursor?: string },
    ) {
      await requireEndpoint(orgId, webhookId, id);
      const rows = await callbacksRepo.forEndpoint(db, orgId, id, query.status, query.limit, decodeCursor(query.cursor));
      const page = rows.slice(0, query.limit);
      const last = page.at(-1);
      return { deliveries: await withAttempts(page), nextCursor: rows.length > query.limit && last ? encodeCursor(last) : null };
    },

    /** The ledger's view: every callback of an action, in order, with its attempts. */
    forAction: async (orgId: string, actionId: string) => withAttempts(await callbacksRepo.forAction(db, orgId, actionId)),

    /** Sends one callback again, with the same webhook-id (receivers deduplicate on it). */
    async replay(orgId: string, deliveryId: string) {
      const callback = await callbacksRepo.find(db, orgId, deliveryId);
      if (!callback) throw notFound('Callback delivery');
      if (callback.status === 'pending') throw new AppError('not_replayable', 'This delivery is still being attempted');
      if (!callback.endpointEnabled) throw new AppError('conflict', 'The callback endpoint is disabled; enable it first');
      await callbacksRepo.requeue(db, deliveryId);
      deps.announce();
      return (await withAttempts([(await callbacksRepo.find(db, orgId, deliveryId))!]))[0]!;
    },

    /** Sends again every failed or dead-lettered callback of an endpoint created since `since`. */
    async recover(orgId: string, webhookId: string, id: string, since: Date) {
      const endpoint = await requireEndpoint(orgId, webhookId, id);
      if (!endpoint.enabled) throw new AppError('conflict', 'The callback endpoint is disabled; enable it first');
      const requeued = await callbacksRepo.requeueFailedSince(db, id, since);
      if (requeued.length > 0) deps.announce();
      return { recovered: requeued.length };
    },
  };
}

export type CallbacksService = ReturnType<typeof createCallbacksService>;
