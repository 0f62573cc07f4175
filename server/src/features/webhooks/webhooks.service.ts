import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely, Updateable } from 'kysely';
import type { DB, OrganizationRow, WebhookRow, WebhooksTable } from '../../db/schema.ts';
import { newSigningSecret, PREVIOUS_SECRET_GRACE_MS, type SecretBox } from '../../lib/crypto.ts';
import { AppError, notFound } from '../../lib/errors.ts';
import { BUS_TOPICS, type ProcessBus } from '../../lib/process-bus.ts';
import { actionRulesRepo, agentsRepo } from '../agents/agents.repo.ts';
import { orgsRepo } from '../orgs/orgs.repo.ts';
import type { PublicWebhook, WebhookInput, WebhookPatch } from './webhooks.schemas.ts';
import { webhooksRepo } from './webhooks.repo.ts';

/** 192 random bits: unguessable, so that the URL alone can be the credential of a `none` webhook. */
const newIdentifier = () => randomBytes(24).toString('base64url');

export function createWebhooksService(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  bus: ProcessBus;
  apiHost: string;
  clock: { now(): Date };
}) {
  const urlOf = (org: Pick<OrganizationRow, 'slug'>, identifier: string) =>
    `${deps.apiHost}/webhooks/actions/${org.slug}/${identifier}`;

  function toPublic(org: Pick<OrganizationRow, 'slug'>, row: WebhookRow): PublicWebhook {
    return {
      id: row.id,
      name: row.name,
      webhookIdentifier: row.identifier,
      url: urlOf(org, row.identifier),
      actionRuleId: row.actionRuleId,
      agentId: row.agentId,
      runAsUserId: row.runAsUserId,
      eventFilter: row.eventFilter,
      verificationScheme: row.verificationScheme,
      rateLimitPerMinute: row.rateLimitPerMinute,
      allowRequestOverrides: row.allowRequestOverrides,
      enabled: row.enabled,
      allowedOrigins: row.allowedOrigins,
      blockedIps: row.blockedIps,
      maxPayloadBytes: row.maxPayloadBytes,
      schedule: row.schedule,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
    };
  }

  /** References must point inside the org: a rule, an agent, a run-as user who is a member. */
  async function checkReferences(orgId: string, input: Partial<WebhookInput>): Promise<void> {
    if (input.actionRuleId && !(await actionRulesRepo.find(deps.db, orgId, input.actionRuleId))) {
      throw new AppError('validation_failed', 'body/actionRuleId: no action rule with this id in the organization');
    }
    if (input.agentId && !(await agentsRepo.find(deps.db, orgId, input.agentId))) {
      throw new AppError('validation_failed', 'body/agentId: no agent with this id in the organization');
    }
    if (input.runAsUserId && !(await orgsRepo.isMember(deps.db, orgId, input.runAsUserId))) {
      throw new AppError('validation_failed', 'body/runAsUserId: no member of the organization with this id');
    }
  }

  function columns(input: Partial<WebhookInput>): Updateable<WebhooksTable> {
    const { eventFilter, allowedOrigins, blockedIps, schedule, ...plain } = input;
    return {
      ...plain,
      ...(eventFilter !== undefined ? { eventFilter: JSON.stringify(eventFilter) } : {}),
      ...(allowedOrigins !== undefined ? { allowedOrigins: JSON.stringify(allowedOrigins) } : {}),
      ...(blockedIps !== undefined ? { blockedIps: JSON.stringify(blockedIps) } : {}),
      ...(schedule !== undefined ? { schedule: JSON.stringify(schedule) } : {}),
    };
  }

  async function requireWebhook(orgId: string, id: string): Promise<WebhookRow> {
    const webhook = await webhooksRepo.find(deps.db, orgId, id);
    if (!webhook) throw notFound('Webhook');
    return webhook;
  }

  return {
    toPublic,
    urlOf,

    async create(org: OrganizationRow, input: WebhookInput) {
      await checkReferences(org.id, input);
      const secret = newSigningSecret();
      const row = await webhooksRepo.insert(deps.db, {
        id: randomUUID(),
        orgId: org.id,
        identifier: newIdentifier(),
        secretEncrypted: deps.box.encrypt(secret),
        // The validated input carries every field (defaults applied), so columns() sets them all.
        ...columns(input),
      } as Parameters<typeof webhooksRepo.insert>[1]);
      return { webhook: toPublic(org, row), secret, url: urlOf(org, row.identifier) };
    },

    list: async (org: OrganizationRow) => (await webhooksRepo.list(deps.db, org.id)).map((row) => toPublic(org, row)),
    get: async (org: OrganizationRow, id: string) => toPublic(org, await requireWebhook(org.id, id)),

    async update(org: OrganizationRow, id: string, patch: WebhookPatch) {
      const current = await requireWebhook(org.id, id);
      await checkReferences(org.id, patch);
      // Switching to or from `none` changes who can post: the URL changes with it.
      const switchesNone =
        patch.verificationScheme !== undefined &&
        (patch.verificationScheme === 'none') !== (current.verificationScheme === 'none');
      const row = await webhooksRepo.update(deps.db, org.id, id, {
        ...columns(patch),
        ...(switchesNone ? { identifier: newIdentifier() } : {}),
      });
      await deps.bus.publish(BUS_TOPICS.webhook, current.identifier);
      return toPublic(org, row ?? current);
    },

    async rotateSecret(org: OrganizationRow, id: string) {
      const current = await requireWebhook(org.id, id);
      const secret = newSigningSecret();
      const isNone = current.verificationScheme === 'none';
      const row = (await webhooksRepo.update(deps.db, org.id, id, {
        secretEncrypted: deps.box.encrypt(secret),
        previousSecretEncrypted: isNone ? null : current.secretEncrypted,
        previousSecretExpiresAt: isNone ? null : new Date(deps.clock.now().getTime() + PREVIOUS_SECRET_GRACE_MS),
        ...(isNone ? { identifier: newIdentifier() } : {}),
      }))!;
      await deps.bus.publish(BUS_TOPICS.webhook, current.identifier);
      return { secret, webhookIdentifier: row.identifier, url: urlOf(org, row.identifier) };
    },

    async delete(org: OrganizationRow, id: string) {
      const row = await webhooksRepo.delete(deps.db, org.id, id);
      if (!row) throw notFound('Webhook');
      await deps.bus.publish(BUS_TOPICS.webhook, row.identifier);
    },

    requireWebhook,
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
