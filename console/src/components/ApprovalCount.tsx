import { Stack, Text } from '@mantine/core';
import { Fragment } from 'react';
import { UserName } from './UserName';

interface Approval {
  approverId: string | null;
  at: string;
  argumentsEdited: boolean;
  /** What the approver wrote with it. */
  reason?: string | null;
  /** The ledger's: an approver after it changed the arguments, and the approvals started again. */
  superseded?: boolean;
}

/** "1 of 2 approvals" and who approved, for a call whose rule asks for several approvers; nothing for one. */
export function ApprovalCount({ org, required, approvals }: { org: string; required: number | null; approvals: Approval[] }) {
  if (required === null || required <= 1) return null;
  const standing = approvals.filter((approval) => !approval.superseded);
  return (
    <Stack gap={0} mb={4} maw={220} role="group" aria-label="Approvals" style={{ overflowWrap: 'anywhere' }}>
      <Text size="xs" fw={600}>
        {standing.length} of {required} approvals
      </Text>
      {approvals.map((approval) => (
        <Fragment key={`${approval.approverId}-${approval.at}`}>
          <Text size="xs" c="dimmed" td={approval.superseded ? 'line-through' : undefined}>
            approved by <UserName org={org} userId={approval.approverId} />
            {approval.argumentsEdited ? ' (edited)' : ''}
            {approval.superseded ? ', before another approver changed the arguments' : ''}
          </Text>
          {approval.reason && (
            <Text size="xs" c="dimmed" fs="italic" pl="xs" lineClamp={3} title={approval.reason}>
              “{approval.reason}”
            </Text>
          )}
        </Fragment>
      ))}
    </Stack>
  );
}
