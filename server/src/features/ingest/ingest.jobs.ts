import type { JobHandler } from '../../jobs/registry.ts';
import type { DeliveriesService } from './deliveries.service.ts';

export function ingestJobHandlers(deps: { deliveries: DeliveriesService }): {
  'webhooks.retry-buffered': JobHandler<'webhooks.retry-buffered'>;
} {
  return {
    'webhooks.retry-buffered': async () => {
      await deps.deliveries.retryDue();
      await deps.deliveries.forgetOldMessageIds();
    },
  };
}
