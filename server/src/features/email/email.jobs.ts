import type { JobHandler } from '../../jobs/registry.ts';
import type { DeliveryEvents } from './delivery-events.service.ts';
import type { NotificationProcessor } from './notification-processor.ts';

export function emailJobHandlers(deps: {
  notifications: Pick<NotificationProcessor, 'purgeUnattributed'>;
  deliveryEvents: DeliveryEvents;
}): {
  'email.lookup-message-id': JobHandler<'email.lookup-message-id'>;
  'email.purge-unattributed': JobHandler<'email.purge-unattributed'>;
} {
  return {
    'email.lookup-message-id': ({ messageRowId }) => deps.deliveryEvents.lookupMessageId(messageRowId),
    'email.purge-unattributed': async () => void (await deps.notifications.purgeUnattributed()),
  };
}
