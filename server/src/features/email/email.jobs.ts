import type { JobHandler } from '../../jobs/registry.ts';
import type { DeliveryEvents } from './delivery-events.service.ts';
import type { NotificationProcessor } from './notification-processor.ts';
import type { SendEmailAgain } from './send-email-again.ts';

export function emailJobHandlers(deps: {
  notifications: Pick<NotificationProcessor, 'purgeUnattributed'>;
  deliveryEvents: DeliveryEvents;
  sendEmailAgain: Pick<SendEmailAgain, 'sendAgain' | 'settleAbandoned'>;
}): {
  'email.lookup-message-id': JobHandler<'email.lookup-message-id'>;
  'email.send-again': JobHandler<'email.send-again'>;
  'email.settle-abandoned-sends': JobHandler<'email.settle-abandoned-sends'>;
  'email.purge-unattributed': JobHandler<'email.purge-unattributed'>;
} {
  return {
    'email.lookup-message-id': ({ messageRowId }) => deps.deliveryEvents.lookupMessageId(messageRowId),
    'email.send-again': ({ messageRowId }, { lastAttempt }) => deps.sendEmailAgain.sendAgain(messageRowId, { lastAttempt }),
    'email.settle-abandoned-sends': async () => void (await deps.sendEmailAgain.settleAbandoned()),
    'email.purge-unattributed': async () => void (await deps.notifications.purgeUnattributed()),
  };
}
