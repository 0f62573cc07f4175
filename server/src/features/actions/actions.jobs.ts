import type { JobHandler } from '../../jobs/registry.ts';
import type { ApprovalsService } from './approvals.service.ts';

/** Runs are not jobs (the actions table is their queue: run-dispatcher.ts); approval deadlines are. */
export function actionsJobHandlers(deps: { approvals: ApprovalsService }): {
  'approvals.expire': JobHandler<'approvals.expire'>;
} {
  return {
    'approvals.expire': ({ toolCallRowId }) => deps.approvals.expire(toolCallRowId),
  };
}
