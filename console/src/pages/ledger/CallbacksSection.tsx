import { Badge, Button, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, type CallbackDelivery, unwrap } from '../../api/client';
import { StatusBadge } from '../../components/StatusBadge';
import { formatTime } from '../../lib/format';
import { keys } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';

function ReplayCallback({ org, deliveryId }: { org: string; deliveryId: string }) {
  const queryClient = useQueryClient();
  const { failed, succeeded } = pageNotices(`callback-replay-${deliveryId}`);
  const replay = useMutation({
    mutationFn: () =>
      unwrap(api.POST('/orgs/{org}/callback-deliveries/{deliveryId}/replay', { params: { path: { org, deliveryId } } })),
    onSuccess: () => succeeded('Callback queued again'),
    onError: failed('Replay refused'),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: keys.org(org) }),
  });
  return (
    <Button size="xs" variant="default" onClick={() => replay.mutate()} loading={replay.isPending}>
      Replay
    </Button>
  );
}

/** Spec 2.8: the signed callbacks this action sent, each with every attempt and its answer. */
export function CallbacksSection({ org, callbacks }: { org: string; callbacks: CallbackDelivery[] }) {
  return (
    <Stack gap="xs">
      <Title order={2} size="h4">
        Callbacks
      </Title>
      {callbacks.length === 0 && (
        <Text size="sm" c="dimmed">
          No callbacks: no enabled callback endpoint subscribes to this action's events.
        </Text>
      )}
      {callbacks.map((callback) => (
        <Card key={callback.id} withBorder padding="sm" data-callback-id={callback.id}>
          <Group justify="space-between" mb="xs">
            <Group gap="xs">
              <Badge variant="outline">{callback.eventType}</Badge>
              <StatusBadge status={callback.status} />
              <Text size="xs" c="dimmed" ff="monospace">
                {callback.url}
              </Text>
            </Group>
            {callback.status !== 'pending' && <ReplayCallback org={org} deliveryId={callback.id} />}
          </Group>
          <Table fz="xs" aria-label={`Attempts of ${callback.eventType}`}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Attempted</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Duration</Table.Th>
                <Table.Th>Answer</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {callback.attempts.map((attempt) => (
                <Table.Tr key={attempt.attemptedAt}>
                  <Table.Td>{formatTime(attempt.attemptedAt)}</Table.Td>
                  <Table.Td>{attempt.statusCode ?? attempt.error ?? '—'}</Table.Td>
                  <Table.Td>{attempt.durationMs} ms</Table.Td>
                  <Table.Td ff="monospace" style={{ wordBreak: 'break-all' }}>
                    {attempt.responseBody ?? ''}
                  </Table.Td>
                </Table.Tr>
              ))}
              {callback.attempts.length === 0 && (
                <Table.Tr>
                  <Table.Td colSpan={4}>
                    Not attempted yet{callback.nextAttemptAt ? `; due ${formatTime(callback.nextAttemptAt)}` : ''}
                  </Table.Td>
                </Table.Tr>
              )}
            </Table.Tbody>
          </Table>
        </Card>
      ))}
    </Stack>
  );
}
