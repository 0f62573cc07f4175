import type { Insertable, Kysely } from 'kysely';
import type { EmailAttachmentsTable } from '../../db/email-schema.ts';
import { queryTemplate, valuesOf } from '../../db/query-template.ts';
import type { DB } from '../../db/schema.ts';
import { emailActionInsert } from '../actions/actions.repo.ts';
import { threadMessageColumns, withThread } from './email-messages.repo.ts';
import { settledValues } from './notifications.repo.ts';

/** The received message's columns, as inbound stores them. */
const messageColumns = [
  ...threadMessageColumns,
  'providerEmailId',
  'ccAddresses',
  'sentAt',
  'headers',
  'authentication',
  'statusDetail',
] as const;
const attachmentColumns = [
  'id',
  'position',
  'providerAttachmentId',
  'filename',
  'contentType',
  'contentDisposition',
  'contentId',
  'sizeBytes',
  'content',
  'status',
  'error',
] as const;

type ReceivedMessage = { [K in (typeof messageColumns)[number]]: unknown } & { id: string; orgId: string; threadId: string };
type ReceivedAttachment = Required<Pick<Insertable<EmailAttachmentsTable>, (typeof attachmentColumns)[number]>>;

/** The action that answers the message: queued, of the inbox's agent (its data and rules as JSON text). */
export interface AnsweringAction {
  id: string;
  agentId: string;
  runAsUserId: string;
  instructions: string;
  traceParent: string | null;
  data: string;
  approvalRules: string;
  /** The inbox assignment's argument rules, as JSON text. */
  argumentRules: string;
  /** How the approvers are told it waits (the inbox assignment's channels), as JSON text. */
  notify: string;
}

/** Everything one received email stores (storeReceived). */
export interface ReceivedEmailParts {
  message: ReceivedMessage;
  thread: { newTitle: string } | 'existing';
  attachments: ReceivedAttachment[];
  /** Its row in the ledger (a delivery of source `email`): accepted with the action, or skipped with `reason`. */
  ledger: { id: string; reason: string | null; payload: string; headers: string };
  action?: AnsweringAction;
  /** The notification it came by, settled as processed (with why it got no answer, if it did not). */
  notification: { id: string; reason: string | null };
}

/** What a statement's arguments are named: the message's columns, then each part's own. */
type StoreArgs = Record<string, unknown>;
const attachmentKey = (index: number, column: string) => `attachment${index}.${column}`;
const actionKeys = [
  'actionId',
  'agentId',
  'runAsUserId',
  'instructions',
  'traceParent',
  'actionData',
  'approvalRules',
  'argumentRules',
  'notify',
] as const;

/** The ledger row of the received email (a delivery of source `email`): accepted with its action, or skipped. */
const ledgerValues = (args: StoreArgs, message: ReceivedMessage, answered: boolean) => ({
  id: args.deliveryId as string,
  orgId: message.orgId,
  webhookId: null,
  actionId: answered ? (args.actionId as string) : null,
  status: answered ? ('accepted' as const) : ('skipped' as const),
  reason: args.ledgerReason as string | null,
  replayable: false,
  eventType: 'email.received',
  externalId: message.providerEmailId as string,
  payload: args.payload as string,
  headers: args.ledgerHeaders as string,
  verificationScheme: 'wh' as const,
  source: 'email' as const,
});

/** The answering action's values, from the statement's arguments. */
function answeringActionValues(args: StoreArgs, message: ReceivedMessage) {
  const action = valuesOf(args, actionKeys);
  return {
    id: action.actionId as string,
    orgId: message.orgId,
    deliveryId: args.deliveryId as string,
    agentId: action.agentId as string,
    runAsUserId: action.runAsUserId as string,
    emailMessageId: message.id,
    instructions: action.instructions as string,
    traceParent: action.traceParent as string | null,
    data: action.actionData as string,
    approvalRules: action.approvalRules as string,
    argumentRules: action.argumentRules as string,
    notify: action.notify as string,
  };
}

/** One statement per shape (new or existing thread, how many attachments, with or without an action). */
function storeStatement(shape: { newThread: boolean; attachments: number; action: boolean }) {
  return queryTemplate((db: Kysely<DB>, args: StoreArgs) => {
    const message = valuesOf(args, messageColumns) as ReceivedMessage;
    let statement = withThread(db, message, shape.newThread ? { newTitle: args.newTitle as string } : 'existing').with(
      'message',
      (q) => q.insertInto('emailMessages').values(message as never),
    );
    if (shape.attachments > 0) {
      const rows = Array.from({ length: shape.attachments }, (_, index) => ({
        orgId: message.orgId,
        messageId: message.id,
        ...Object.fromEntries(attachmentColumns.map((column) => [column, args[attachmentKey(index, column)]])),
      }));
      statement = statement.with('attachments', (q) => q.insertInto('emailAttachments').values(rows as never));
    }
    statement = statement.with('ledger', (q) =>
      q.insertInto('webhookDeliveries').values(ledgerValues(args, message, shape.action)),
    );
    if (shape.action) statement = statement.with('action', (q) => emailActionInsert(q, answeringActionValues(args, message)));
    return statement
      .updateTable('emailNotifications')
      .set(settledValues({ status: 'processed', reason: args.notificationReason as string | null }))
      .where('id', '=', args.notificationId as string)
      .where('status', '=', 'received');
  });
}

const statements = new Map<string, ReturnType<typeof storeStatement>>();

/**
 * A received email in one statement, atomic without a transaction: its thread (created, or made the
 * newest), the message, its attachments, its ledger row, the action that answers it (when one does)
 * and its notification's end. The foreign keys between these rows are checked at the statement's
 * end, when all of them are there. Built and compiled once per shape (the inbound path's largest
 * query: building it anew was a twentieth of the email worker's CPU, docs/benchmarks.md).
 */
export async function storeReceived(db: Kysely<DB>, parts: ReceivedEmailParts): Promise<void> {
  const shape = { newThread: parts.thread !== 'existing', attachments: parts.attachments.length, action: Boolean(parts.action) };
  const key = `${shape.newThread}:${shape.attachments}:${shape.action}`;
  const statement = statements.get(key) ?? storeStatement(shape);
  statements.set(key, statement);
  const args: StoreArgs = {
    ...parts.message,
    newTitle: parts.thread === 'existing' ? null : parts.thread.newTitle,
    deliveryId: parts.ledger.id,
    ledgerReason: parts.ledger.reason,
    payload: parts.ledger.payload,
    ledgerHeaders: parts.ledger.headers,
    notificationId: parts.notification.id,
    notificationReason: parts.notification.reason,
  };
  parts.attachments.forEach((attachment, index) => {
    for (const column of attachmentColumns) args[attachmentKey(index, column)] = attachment[column];
  });
  if (parts.action) {
    const { id, data, ...rest } = parts.action;
    Object.assign(args, rest, { actionId: id, actionData: data });
  }
  await statement.rows(db, args);
}
