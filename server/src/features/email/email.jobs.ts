import type { JobHandler } from '../../jobs/registry.ts';
import type { DeliveryEvents } from './delivery-events.service.ts';
import type { NotificationProcessor } from './notification-processor.ts';

export function emailJobHandlers(deps: { notifications: NotificationProcessor; deliveryEvents: DeliveryEvents }): {
  'email.process': JobHandler<'email.process'>;
  'email.lookup-message-id': JobHandler<'email.lookup-message-id'>;
  'email.recover': JobHandler<'email.recover'>;
} {
  return {
    'email.process': ({ notificationId }, meta) => deps.notifications.process(notificationId, meta),
    'email.lookup-message-id': ({ messageRowId }) => deps.deliveryEvents.lookupMessageId(messageRowId),
    'email.recover': async () => void (await deps.notifications.recover({ atStart: false })),
  };
}
