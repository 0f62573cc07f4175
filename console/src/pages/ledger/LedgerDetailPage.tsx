import { AnchorLink } from '../../components/links';
import { Button, Card, Group, SimpleGrid, Stack, Table, Text, Timeline, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { api, unwrap } from '../../api/client';
import { JsonBlock } from '../../components/JsonBlock';
import { UserName } from '../../components/UserName';
import { QueryError } from '../../components/RouteError';
import { StatusBadge } from '../../components/StatusBadge';
import { counted, formatTime, usd } from '../../lib/format';
import { useOrgSlug } from '../../lib/org';
import { agentsQuery, keys } from '../../lib/queries';
import { LiveBadge } from '../OrgLayout';
import { CallbacksSection } from './CallbacksSection';
import { ConversationSection } from './ConversationSection';
import { ToolCallsSection } from './ToolCallsSection';
import { pageNotices } from '../../lib/notices';

function Field({ label, children }: { label: string; children: React.ReactNode }) {
  return (
    <div>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <Text size="sm" component="div">
        {children ?? '—'}
      </Text>
    </div>
  );
}

/** Spec 2.8: one ledger row with everything an operator needs to understand what happened. */
export function LedgerDetailPage() {
  const org = useOrgSlug();
  const { id } = useParams({ from: '/signed-in/o/$org/admin/ledger/$id' });
  const queryClient = useQueryClient();
  const { data: agents } = useQuery(agentsQuery(org));
  const row = useQuery({
    queryKey: keys.ledgerRow(org, id),
    queryFn: () => unwrap(api.GET('/orgs/{org}/ledger/{id}', { params: { path: { org, id } } })),
  });
  const { failed, succeeded } = pageNotices('ledger-entry');
  const replay = useMutation({
    mutationFn: (eventId: string) =>
      unwrap(api.POST('/orgs/{org}/deliveries/{eventId}/replay', { params: { path: { org, eventId } } })),
    onSuccess: (result) => {
      succeeded(`Replayed: ${result.status}${result.reason ? ` (${result.reason})` : ''}`);
      void queryClient.invalidateQueries({ queryKey: keys.org(org) });
    },
    onError: failed('Replay refused'),
  });

  if (row.error) return <QueryError error={row.error} />;
  if (!row.data) return <Text c="dimmed">Loading…</Text>;
  const entry = row.data;
  const execution = entry.execution;

  return (
    <Stack>
      <AnchorLink to="/o/$org/ledger" params={{ org }} size="sm">
        ← Ledger
      </AnchorLink>
      <Group justify="space-between">
        <Group gap="sm">
          <Title order={1} size="h2">
            {entry.summary}
          </Title>
          <StatusBadge status={entry.status} />
          <LiveBadge />
        </Group>
        {entry.replayable && (
          <Button onClick={() => replay.mutate(entry.eventId)} loading={replay.isPending}>
            Replay
          </Button>
        )}
      </Group>
      <Card withBorder>
        <SimpleGrid cols={{ base: 2, md: 4 }}>
          <Field label="Kind">{entry.kind}</Field>
          <Field label="Source">{entry.source}</Field>
          <Field label="Event type">{entry.eventType}</Field>
          <Field label="External id">{entry.externalId}</Field>
          <Field label="Received">{formatTime(entry.createdAt)}</Field>
          <Field label="Delivery">
            <StatusBadge status={entry.deliveryStatus} />
          </Field>
          <Field label="Reason">{entry.reason}</Field>
          <Field label="Approval">{entry.approvalState ?? 'none'}</Field>
          <Field label="Verification">{entry.verificationScheme}</Field>
          <Field label="Sender IP">{entry.sourceIp}</Field>
          <Field label="Run as user">
            <UserName org={org} userId={execution?.runAsUserId} />
          </Field>
          <Field label="Agent">{agents?.find((agent) => agent.id === execution?.agentId)?.name ?? execution?.agentId}</Field>
          {entry.agentVersion !== null && (
            <Field label="Agent version">
              {`version ${entry.agentVersion}`}
              {entry.agentLiveVersion !== null && entry.agentLiveVersion !== entry.agentVersion
                ? ` (version ${entry.agentLiveVersion} is live now)`
                : ' (live)'}
            </Field>
          )}
          {execution && (
            <Field label="Model usage">
              {`${counted(execution.usage.calls, 'call')}, ${counted(execution.usage.totalTokens, 'token')}, `}
              {execution.usage.costUsd === null ? 'cost unknown' : usd(execution.usage.costUsd)}
              {execution.usage.unpricedCalls > 0 && execution.usage.costUsd !== null
                ? ` (+${execution.usage.unpricedCalls} unpriced)`
                : ''}
            </Field>
          )}
        </SimpleGrid>
      </Card>

      <SimpleGrid cols={{ base: 1, lg: 2 }}>
        <Stack gap="xs">
          <Title order={2} size="h4">
            Ingress payload
          </Title>
          <JsonBlock value={entry.ingressPayload ?? entry.rawBody} label="Ingress payload" />
        </Stack>
        <Stack gap="xs">
          <Title order={2} size="h4">
            Headers (redacted)
          </Title>
          <Table withTableBorder fz="xs" aria-label="Request headers">
            <Table.Tbody>
              {Object.entries(entry.headers).map(([name, value]) => (
                <Table.Tr key={name}>
                  <Table.Td ff="monospace">{name}</Table.Td>
                  <Table.Td ff="monospace" style={{ wordBreak: 'break-all' }}>
                    {value}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Stack>
      </SimpleGrid>

      <Title order={2} size="h4">
        Lifecycle
      </Title>
      <Timeline bulletSize={14} lineWidth={2} active={entry.lifecycleEvents.length - 1}>
        {entry.lifecycleEvents.map((event) => (
          <Timeline.Item key={`${event.at}-${event.status}`} title={<StatusBadge status={event.status} />}>
            <Text size="sm">{event.cause}</Text>
            <Text size="xs" c="dimmed">
              {formatTime(event.at)}
            </Text>
          </Timeline.Item>
        ))}
      </Timeline>

      {execution && <ToolCallsSection org={org} actionId={entry.id} toolCalls={execution.toolCalls} />}
      {execution && <ConversationSection messages={execution.conversation} />}
      {execution && (execution.result !== null || execution.error) && (
        <Stack gap="xs">
          <Title order={2} size="h4">
            {execution.error ? 'Error' : 'Result'}
          </Title>
          <JsonBlock value={execution.error ?? execution.result} label="Result" wrap />
        </Stack>
      )}
      <CallbacksSection org={org} callbacks={entry.callbacks} />
    </Stack>
  );
}
