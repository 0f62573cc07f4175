import { Button, Collapse, Group, Stack, Table, Text, TextInput } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { AnchorLink } from '../../components/links';
import { StatusBadge } from '../../components/StatusBadge';
import { formatTime } from '../../lib/format';
import { keys } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';

/** One endpoint's deliveries, newest first, with replay of one and recovery of the failed since a time. */
export function CallbackDeliveries({ org, webhookId, callbackId }: { org: string; webhookId: string; callbackId: string }) {
  const [opened, { toggle }] = useDisclosure(false);
  const queryClient = useQueryClient();
  const path = { org, webhookId, callbackId };
  const queryKey = [...keys.org(org), 'callback-deliveries', callbackId];
  const deliveries = useQuery({
    queryKey,
    enabled: opened,
    queryFn: () =>
      unwrap(
        api.GET('/orgs/{org}/webhooks/{webhookId}/callbacks/{callbackId}/deliveries', { params: { path, query: { limit: 50 } } }),
      ).then((body) => body.deliveries),
  });
  const [since, setSince] = useState('');
  const refresh = () => void queryClient.invalidateQueries({ queryKey });
  const { failed, succeeded } = pageNotices(`callback-deliveries-${callbackId}`);
  const replay = useMutation({
    mutationFn: (deliveryId: string) =>
      unwrap(api.POST('/orgs/{org}/callback-deliveries/{deliveryId}/replay', { params: { path: { org, deliveryId } } })),
    onSuccess: () => succeeded('Queued again'),
    onError: failed('Replay refused'),
    onSettled: refresh,
  });
  const recover = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/orgs/{org}/webhooks/{webhookId}/callbacks/{callbackId}/recover', {
          params: { path },
          body: { since: new Date(since).toISOString() },
        }),
      ),
    onSuccess: (result) => succeeded(`${result.recovered} deliveries queued again`),
    onError: failed('Not recovered'),
    onSettled: refresh,
  });
  return (
    <Stack gap="xs" mt="sm">
      <Group>
        <Button size="xs" variant="subtle" onClick={toggle} aria-expanded={opened}>
          {opened ? 'Hide deliveries' : 'Show deliveries'}
        </Button>
      </Group>
      <Collapse expanded={opened}>
        <Stack gap="xs">
          <Group align="flex-end" gap="xs">
            <TextInput
              type="datetime-local"
              label="Re-send failed deliveries since"
              size="xs"
              value={since}
              onChange={(event) => setSince(event.currentTarget.value)}
            />
            <Button size="xs" variant="default" disabled={!since} loading={recover.isPending} onClick={() => recover.mutate()}>
              Recover
            </Button>
          </Group>
          <Table fz="xs" aria-label="Callback deliveries">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Created</Table.Th>
                <Table.Th>Event</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Attempts</Table.Th>
                <Table.Th>Last answer</Table.Th>
                <Table.Th />
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {deliveries.data?.map((delivery) => (
                <Table.Tr key={delivery.id}>
                  <Table.Td>
                    <AnchorLink to="/o/$org/ledger/$id" params={{ org, id: delivery.actionId }} size="xs">
                      {formatTime(delivery.createdAt)}
                    </AnchorLink>
                  </Table.Td>
                  <Table.Td>{delivery.eventType}</Table.Td>
                  <Table.Td>
                    <StatusBadge status={delivery.status} />
                  </Table.Td>
                  <Table.Td>{delivery.attemptCount}</Table.Td>
                  <Table.Td>{delivery.lastStatusCode ?? delivery.lastError ?? '—'}</Table.Td>
                  <Table.Td>
                    {delivery.status !== 'pending' && (
                      <Button size="compact-xs" variant="default" onClick={() => replay.mutate(delivery.id)}>
                        Replay
                      </Button>
                    )}
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
          {deliveries.isSuccess && deliveries.data.length === 0 && (
            <Text size="xs" c="dimmed">
              Nothing sent to this endpoint yet.
            </Text>
          )}
        </Stack>
      </Collapse>
    </Stack>
  );
}
