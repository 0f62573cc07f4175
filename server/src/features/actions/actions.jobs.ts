import type { JobHandler } from '../../jobs/registry.ts';
import type { ActionRunner } from './action-runner.ts';
import type { ApprovalsService } from './approvals.service.ts';
import type { RunRecovery } from './run-recovery.ts';

export function actionsJobHandlers(deps: { runner: ActionRunner; recovery: RunRecovery; approvals: ApprovalsService }): {
  'actions.run': JobHandler<'actions.run'>;
  'actions.recover': JobHandler<'actions.recover'>;
  'approvals.expire': JobHandler<'approvals.expire'>;
} {
  return {
    'actions.run': ({ actionId }) => deps.runner.run(actionId),
    'actions.recover': async () => void (await deps.recovery.resumeAbandoned({ includeLive: false })),
    'approvals.expire': ({ toolCallRowId }) => deps.approvals.expire(toolCallRowId),
  };
}
