import { EmptyState } from '../../components/FormParts';
import { AnchorLink } from '../../components/links';
import { Group, Stack, Table, Text, Title } from '@mantine/core';
import { useInterval } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { ApprovalButtons } from '../../components/ApprovalButtons';
import { ApprovalCount } from '../../components/ApprovalCount';
import { CallInput, editableInput } from '../../components/EditedInput';
import { WhyWaits } from '../../components/WhyWaits';
import { UserName } from '../../components/UserName';
import { QueryError } from '../../components/RouteError';
import { actionName, formatTime, relativeTime } from '../../lib/format';
import { useOrgSlug } from '../../lib/org';
import { meQuery, pendingApprovalsQuery } from '../../lib/queries';
import { LiveBadge } from '../OrgLayout';

/** "in 4 min" that counts down while the page is open. */
function useNow(everyMs: number) {
  const [now, setNow] = useState(Date.now());
  const interval = useInterval(() => setNow(Date.now()), everyMs);
  useEffect(() => {
    interval.start();
    return interval.stop;
  }, [interval]);
  return now;
}

/** Spec 4.2.5: the tool calls waiting for a human, decided here; they leave the list live. */
export function ApprovalsPage() {
  const org = useOrgSlug();
  // The ledger is the admins': a member who decides sees the event, not a link to it.
  const isAdmin = useQuery(meQuery).data?.role === 'Admin';
  const approvals = useQuery(pendingApprovalsQuery(org));
  const now = useNow(15_000);
  const pending = approvals.data?.approvals ?? [];
  return (
    <Stack>
      <Group gap="sm">
        <Title order={1} size="h2">
          Approvals
        </Title>
        <LiveBadge />
      </Group>
      {approvals.error && <QueryError error={approvals.error} />}
      {approvals.isSuccess && pending.length === 0 && <EmptyState>Nothing waits for a decision.</EmptyState>}
      {pending.length > 0 && (
        <Table.ScrollContainer minWidth={900}>
          <Table verticalSpacing="sm" aria-label="Pending approvals">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Tool</Table.Th>
                <Table.Th>Input</Table.Th>
                <Table.Th>Action</Table.Th>
                <Table.Th>Requested</Table.Th>
                <Table.Th>Decision</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {pending.map((approval) => (
                <Table.Tr key={approval.toolCallId} data-tool-call-id={approval.toolCallId}>
                  <Table.Td>
                    <Text size="sm" ff="monospace">
                      {approval.toolName}
                    </Text>
                    <WhyWaits modeSource={approval.modeSource} stagedReason={approval.stagedReason} />
                  </Table.Td>
                  <Table.Td miw={260} maw={360}>
                    <CallInput
                      toolName={approval.toolName}
                      input={approval.input}
                      approvedInput={approval.approvedInput}
                      maxHeight={200}
                    />
                  </Table.Td>
                  <Table.Td maw={280}>
                    {isAdmin ? (
                      <AnchorLink to="/o/$org/ledger/$id" params={{ org, id: approval.actionId }} size="sm">
                        {actionName(approval)}
                      </AnchorLink>
                    ) : (
                      <Text size="sm">{actionName(approval)}</Text>
                    )}
                    {approval.email && (
                      // An inbox's action: which email the call would answer, as the approval email and Slack say it.
                      <Text size="xs" lineClamp={2}>
                        {`from ${approval.email.from}: "${approval.email.subject}"`}
                      </Text>
                    )}
                    <Text size="xs" c="dimmed">
                      as <UserName org={org} userId={approval.runAsUserId} />
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{formatTime(approval.requestedAt)}</Text>
                    <Text size="xs" c="dimmed">
                      {approval.expiresAt ? `expires ${relativeTime(approval.expiresAt, now)}` : 'no deadline'}
                    </Text>
                  </Table.Td>
                  <Table.Td miw={190}>
                    <ApprovalCount org={org} required={approval.approvalsRequired} approvals={approval.approvals} />
                    <ApprovalButtons
                      org={org}
                      actionId={approval.actionId}
                      toolCallId={approval.toolCallId}
                      toolName={approval.toolName}
                      input={editableInput(approval)}
                      approvedBy={approval.approvals.map((given) => given.approverId)}
                    />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
      )}
    </Stack>
  );
}
