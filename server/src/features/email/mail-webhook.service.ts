import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { DB } from '../../db/schema.ts';
import type { Clock } from '../../lib/clock.ts';
import type { SecretBox } from '../../lib/crypto.ts';
import { AppError } from '../../lib/errors.ts';
import { jsonShapeProblem, unstorableText } from '../../lib/json-input.ts';
import { anySignatureMatches, checkTimestamp, signStandardWebhook } from '../../lib/standard-webhooks.ts';
import { notificationSchema, recipientsOf, TAG_ORG, uuidTag } from './notification-payload.ts';
import type { InboxRoute, InboxRoutes } from './inbox-routes.ts';
import { notificationsRepo } from './notifications.repo.ts';

export type IntakeResult =
  | { status: 'accepted' | 'duplicate'; notificationId: string }
  | { status: 'ignored'; notificationId: string; reason: string };

const header = (headers: IncomingHttpHeaders, name: string) => {
  const value = headers[`svix-${name}`] ?? headers[`webhook-${name}`];
  return Array.isArray(value) ? value[0] : value;
};

/**
 * `POST /webhooks/mail`: the provider's signed notifications. The org is found from the notification
 * (the inbox of a recipient; the email we sent, by its provider id or our tag on it) and only that
 * org's secret is tried, on the raw bytes. A verified notification is committed once per (org,
 * svix-id) and answered; the workers claim it from its table and process it (fetches, downloads).
 */
export function createMailWebhookIntake(deps: {
  db: Kysely<DB>;
  box: SecretBox;
  clock: Clock;
  /** The org of an inbox address and its secret (kept, and dropped when an inbox or integration changes). */
  inboxRoutes: InboxRoutes;
  /** Called once stored notifications have committed: the workers of every process claim them now. */
  wakeWorkers: () => void;
  logger: Logger;
}) {
  const { db } = deps;

  async function candidatesOf(type: unknown, data: Record<string, unknown>): Promise<InboxRoute[]> {
    if (type === 'email.received') return deps.inboxRoutes.orgsOf(recipientsOf(data));
    if (typeof data.email_id !== 'string' || data.email_id.length > 200) return [];
    const orgs = await notificationsRepo.orgsOfSentEmail(db, data.email_id, uuidTag({ data }, TAG_ORG));
    return orgs.map(({ orgId, webhookSecretEncrypted }) => ({ orgId, webhookSecret: deps.box.decrypt(webhookSecretEncrypted) }));
  }

  return {
    /** `traceParent`: the request's span, which the action of a received email joins (tracing on). */
    async receive(raw: Buffer, headers: IncomingHttpHeaders, traceParent: string | null = null): Promise<IntakeResult> {
      const id = header(headers, 'id');
      const timestamp = header(headers, 'timestamp');
      const signature = header(headers, 'signature');
      if (!id || !timestamp || !signature) {
        throw new AppError(
          'signature_missing',
          'Missing svix-id, svix-timestamp or svix-signature header (or their webhook-* equivalents)',
        );
      }
      if (id.length > 256) throw new AppError('signature_invalid', 'The svix-id header is too long');
      const seconds = checkTimestamp(timestamp, Math.floor(deps.clock.now().getTime() / 1000));

      const shape = jsonShapeProblem(raw);
      if (shape) throw new AppError('invalid_payload', `The body ${shape}`);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new AppError('invalid_json', 'The body is not valid JSON');
      }
      const { type, data } = (body ?? {}) as { type?: unknown; data?: unknown };
      const eventType = typeof type === 'string' ? type.slice(0, 100) : 'unknown';
      const safeHeaders = JSON.stringify({
        'svix-id': id,
        'svix-timestamp': timestamp,
        'svix-signature': '[redacted]',
        ...(headers['user-agent'] ? { 'user-agent': String(headers['user-agent']).slice(0, 300) } : {}),
      });
      const candidates =
        typeof data === 'object' && data !== null ? await candidatesOf(type, data as Record<string, unknown>) : [];
      if (candidates.length === 0) {
        const reason =
          eventType === 'email.received' ? 'no inbox for any recipient of the email' : 'no email we sent has this email_id';
        const notificationId = randomUUID();
        await notificationsRepo.insertIgnored(db, { id: notificationId, svixId: id, eventType, reason, headers: safeHeaders });
        deps.logger.info({ svixId: id, eventType, reason }, 'mail notification ignored');
        return { status: 'ignored', notificationId, reason };
      }

      const verified = candidates.filter((candidate) =>
        anySignatureMatches([signStandardWebhook(candidate.webhookSecret, id, seconds, raw).slice(3)], signature),
      );
      if (verified.length === 0) throw new AppError('signature_invalid', 'The signature does not match');
      const unstorable = unstorableText(body);
      if (unstorable) throw new AppError('invalid_payload', unstorable);
      const parsed = notificationSchema.safeParse(body);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`).join('; ');
        throw new AppError('invalid_payload', `The notification is not one this endpoint reads: ${problems}`.slice(0, 1000));
      }

      // Normally one org (one statement, no transaction); an account shared by several orgs notifies each of them.
      const store = (trx: Kysely<DB>) =>
        Promise.all(
          verified.map(({ orgId }) =>
            notificationsRepo.insertOnce(trx, {
              id: randomUUID(),
              orgId,
              svixId: id,
              eventType,
              payload: JSON.stringify(parsed.data),
              headers: safeHeaders,
              traceParent,
            }),
          ),
        );
      const stored = (verified.length === 1 ? await store(db) : await db.transaction().execute(store)).find(Boolean);
      if (stored) {
        deps.wakeWorkers();
        return { status: 'accepted', notificationId: stored.id };
      }
      return { status: 'duplicate', notificationId: await notificationsRepo.idOf(db, verified[0]!.orgId, id) };
    },
  };
}

export type MailWebhookIntake = ReturnType<typeof createMailWebhookIntake>;
