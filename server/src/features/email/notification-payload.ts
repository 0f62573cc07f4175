import { z } from 'zod';
import { addressesOf } from './email-content.ts';

/**
 * The provider's notifications (Resend's shapes, REFERENCE.md), read leniently: fields we do not use
 * pass, fields we use are bounded. `email.received` carries no body and no headers (they are
 * fetched); the others are about an email we sent, named by its `email_id`.
 */
const text = (max: number) => z.string().max(max);
const addressList = z.array(text(1000)).max(1000).nullish();
/** Tags as Resend sends them on events (an object), or as they were sent (name/value pairs). */
const tags = z
  .union([z.record(text(256), text(256)), z.array(z.looseObject({ name: text(256), value: text(256) })).max(50)])
  .nullish();

export const notificationSchema = z.object({
  type: text(100).min(1),
  created_at: text(100).nullish(),
  data: z.looseObject({
    email_id: text(200).min(1),
    created_at: text(100).nullish(),
    from: text(1000).nullish(),
    to: addressList,
    cc: addressList,
    bcc: addressList,
    received_for: addressList,
    message_id: text(1000).nullish(),
    subject: text(10_000).nullish(),
    tags,
    bounce: z.looseObject({ type: text(100).nullish(), subType: text(200).nullish(), message: text(5000).nullish() }).nullish(),
    failed: z.looseObject({ reason: text(5000).nullish() }).nullish(),
    suppressed: z.looseObject({ message: text(5000).nullish(), type: text(200).nullish() }).nullish(),
    click: z.looseObject({ link: text(5000).nullish() }).nullish(),
  }),
});

export type MailNotification = z.infer<typeof notificationSchema>;

/** Our tags on what we send: the notifications about it name the org and the message before we know the provider's id. */
export const TAG_ORG = 'ap_org';
export const TAG_MESSAGE = 'ap_message';

/** Our tag of an org or message id: a UUID, or none (the notification may not be validated yet). */
export function uuidTag(notification: { data: { tags?: unknown } }, name: string): string | undefined {
  const value = tagValue(notification, name);
  return value !== undefined && z.uuid().safeParse(value).success ? value : undefined;
}

/** Every address an inbound email was delivered to (to, cc, received_for, bcc), distinct, bounded. */
export function recipientsOf(data: { to?: unknown; cc?: unknown; received_for?: unknown; bcc?: unknown }): string[] {
  return [
    ...new Set([...addressesOf(data.to), ...addressesOf(data.cc), ...addressesOf(data.received_for), ...addressesOf(data.bcc)]),
  ].slice(0, 200);
}

/** A tag's value, read from a notification before it is validated too (anything else than a string is none). */
function tagValue(notification: { data: { tags?: unknown } }, name: string): string | undefined {
  const { tags } = notification.data;
  if (typeof tags !== 'object' || tags === null) return undefined;
  const value = Array.isArray(tags)
    ? (tags.find((tag) => typeof tag === 'object' && tag !== null && tag.name === name) as { value?: unknown } | undefined)?.value
    : (tags as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}
