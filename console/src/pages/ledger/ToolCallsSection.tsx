import { Anchor, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import type { ToolCall } from '../../api/client';
import { ApprovalButtons } from '../../components/ApprovalButtons';
import { ApprovalCount } from '../../components/ApprovalCount';
import { CallInput, editableInput } from '../../components/EditedInput';
import { JsonBlock } from '../../components/JsonBlock';
import { StatusBadge } from '../../components/StatusBadge';
import { WhyWaits } from '../../components/WhyWaits';
import { formatTime } from '../../lib/format';
import { membersQuery } from '../../lib/queries';

const CHANNEL_LABELS = {
  console: 'the console',
  api: 'the API',
  email_link: 'an email link',
  email_reply: 'an email reply',
  slack: 'Slack',
} as const;

/** The agent's tool calls: what it asked, how each was decided, what it got back. */
export function ToolCallsSection({ org, actionId, toolCalls }: { org: string; actionId: string; toolCalls: ToolCall[] }) {
  const { data: members = [] } = useQuery(membersQuery(org));
  const who = (userId: string | null) => members.find((member) => member.id === userId)?.email ?? userId ?? 'someone';
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Tool calls
      </Title>
      {toolCalls.length === 0 ? (
        <Text size="sm" c="dimmed">
          No tool calls.
        </Text>
      ) : (
        <Table withTableBorder verticalSpacing="xs" aria-label="Tool calls">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Tool</Table.Th>
              <Table.Th>Mode</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Input</Table.Th>
              <Table.Th>Output</Table.Th>
              <Table.Th>Decision</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {toolCalls.map((call) => (
              <Table.Tr key={call.toolCallId}>
                <Table.Td ff="monospace">{call.toolName}</Table.Td>
                <Table.Td>
                  {call.mode}
                  <WhyWaits modeSource={call.modeSource} stagedReason={call.stagedReason} />
                </Table.Td>
                <Table.Td>
                  <StatusBadge status={call.status} />
                </Table.Td>
                <Table.Td miw={240} maw={320}>
                  <CallInput toolName={call.toolName} input={call.input} approvedInput={call.approvedInput} maxHeight={160} />
                </Table.Td>
                <Table.Td miw={200} maw={320}>
                  {call.output === null ? (
                    '—'
                  ) : (
                    <JsonBlock value={call.output} maxHeight={160} label={`Output of ${call.toolName}`} wrap />
                  )}
                  <DocumentLink org={org} call={call} />
                </Table.Td>
                <Table.Td>
                  <Notified notifications={call.notifications} who={who} />
                  <ApprovalCount org={org} required={call.approvalsRequired} approvals={call.approvals} />
                  {call.approval === 'pending' ? (
                    <ApprovalButtons
                      org={org}
                      actionId={actionId}
                      toolCallId={call.toolCallId}
                      toolName={call.toolName}
                      input={editableInput(call)}
                      approvedBy={call.approvals.filter((approval) => !approval.superseded).map((a) => a.approverId)}
                    />
                  ) : (
                    <Stack gap={2}>
                      <StatusBadge status={call.approval} />
                      {call.channel && (
                        <Text size="xs" c="dimmed">
                          {call.approval === 'sent_back' ? 'sent back' : call.approval} by {who(call.approverId)} via{' '}
                          {CHANNEL_LABELS[call.channel]}
                          {call.approval === 'sent_back' && call.reason ? ':' : ''}
                        </Text>
                      )}
                      {call.reason && <Text size="xs">{call.reason}</Text>}
                      {call.refusedAttempts.map((attempt) => (
                        <Text key={`${attempt.at}-${attempt.channel}`} size="xs" c="red.9">
                          refused ({CHANNEL_LABELS[attempt.channel]}, {formatTime(attempt.at)}): {attempt.reason}
                        </Text>
                      ))}
                      {call.decidedAt && (
                        <Text size="xs" c="dimmed">
                          {formatTime(call.decidedAt)}
                        </Text>
                      )}
                    </Stack>
                  )}
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}

type DocumentResult = { documentId?: unknown; result?: { documentId?: unknown } };
/**
 * The PDF a generateDocument call wrote, downloaded (an attachment, never shown on our origin). The
 * tool's result is `{ documentId }`, or `{ note, result: { documentId } }` for a call an approver edited.
 */
function DocumentLink({ org, call }: { org: string; call: ToolCall }) {
  const output = call.output as { type?: string; value?: DocumentResult } | null;
  const value = output?.type === 'json' ? output.value : undefined;
  const documentId = value?.documentId ?? value?.result?.documentId;
  if (call.toolName !== 'generateDocument' || typeof documentId !== 'string') return null;
  return (
    <Anchor
      size="sm"
      href={`/orgs/${encodeURIComponent(org)}/documents/${encodeURIComponent(documentId)}`}
      target="_blank"
      rel="noopener"
    >
      Download the document
    </Anchor>
  );
}

type Notification = ToolCall['notifications'][number];
/** One approver emailed (or why not), or the call posted in the org's Slack channel (or why not). */
function notificationLine(notification: Notification, who: (userId: string | null) => string): string {
  const sent = notification.status === 'sent';
  if (notification.channel === 'slack')
    return sent
      ? `posted in Slack (${notification.address}), ${formatTime(notification.at)}`
      : `not posted in Slack (${notification.status}): ${notification.reason ?? 'sending'}`;
  const to = notification.address ?? who(notification.userId);
  return sent
    ? `emailed ${to}, ${formatTime(notification.at)}`
    : `not emailed ${to} (${notification.status}): ${notification.reason ?? 'sending'}`;
}

/** Whom the rule asked, and whether the email reached them (or why not). */
function Notified({ notifications, who }: { notifications: ToolCall['notifications']; who: (userId: string | null) => string }) {
  if (notifications.length === 0) return null;
  return (
    <Stack gap={0} mb={4}>
      {notifications.map((notification) => (
        <Text
          key={`${notification.userId}-${notification.channel}`}
          size="xs"
          c={notification.status === 'sent' ? 'dimmed' : 'red.9'}
        >
          {notificationLine(notification, who)}
        </Text>
      ))}
    </Stack>
  );
}
