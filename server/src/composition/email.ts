import { createDeliveryEvents } from '../features/email/delivery-events.service.ts';
import { createEmailIntegrationService } from '../features/email/email-integration.service.ts';
import { createEmailThreadsService } from '../features/email/email-threads.service.ts';
import { createInboundEmail, type InboundReplyHook } from '../features/email/inbound.service.ts';
import { createInboxRoutes } from '../features/email/inbox-routes.ts';
import { createInboxesService } from '../features/email/inboxes.service.ts';
import { createMailClient } from '../features/email/mail-client.ts';
import { createMailWebhookIntake } from '../features/email/mail-webhook.service.ts';
import { createNotificationProcessor } from '../features/email/notification-processor.ts';
import { createOutboundMail } from '../features/email/outbound-mail.ts';
import { createSendEmail } from '../features/email/send-email.ts';
import { createSendEmailAgain } from '../features/email/send-email-again.ts';
import { createThreadMail } from '../features/email/thread-mail.ts';
import { BUS_TOPICS } from '../lib/process-bus.ts';
import type { Shared } from './shared.ts';

/** The org's mail integration, inboxes, inbound mail and its notifications, and the sendEmail tool. */
export function composeEmail(
  { config, db, clock, logger, metrics, box, bus, jobs, wakeRunners }: Shared,
  deps: { replyHook: InboundReplyHook },
) {
  const mail = createMailClient({ ...config.mailApi, now: () => clock.now().getTime() });
  const emailIntegration = createEmailIntegrationService({ db, box, bus, clock, logger, mail });
  const deliveryEvents = createDeliveryEvents({ db, box, mail, clock });
  const notifications = createNotificationProcessor({
    db,
    logger,
    metrics,
    leaseMs: config.email.leaseMs,
    concurrency: config.email.concurrency,
    pollMs: config.jobs.pollMs,
    batchWindowMs: config.email.batchWindowMs,
    deliveryEvents,
    inbound: createInboundEmail({
      db,
      box,
      mail,
      clock,
      wakeRunners,
      replyHook: deps.replyHook,
      limits: {
        maxAttachmentBytes: config.email.maxAttachmentBytes,
        maxAttachments: config.email.maxAttachments,
        downloadTimeoutMs: config.mailApi.timeoutMs,
        autoRepliesPerThreadPerHour: config.email.autoRepliesPerThreadPerHour,
      },
    }),
  });
  const services = {
    emailIntegration,
    inboxes: createInboxesService({ db, bus, integration: emailIntegration }),
    mailWebhook: createMailWebhookIntake({
      db,
      box,
      clock,
      logger,
      inboxRoutes: createInboxRoutes({ db, box, bus, clock }),
      wakeWorkers: () => bus.signal(BUS_TOPICS.emailNotifications),
    }),
    emailThreads: createEmailThreadsService({ db }),
  };
  const threadMail = createThreadMail({ db, bus, box, deliver: createOutboundMail({ db, box, mail, jobs, clock }), logger });
  const sendEmailAgain = createSendEmailAgain({ db, threadMail, jobs, clock, logger });
  const sendEmailTool = createSendEmail({
    db,
    threadMail,
    later: sendEmailAgain,
    integration: emailIntegration,
    maxRecipients: config.email.maxRecipients,
  });
  return { services, notifications, deliveryEvents, sendEmailTool, sendEmailAgain, mail, threadMail };
}
