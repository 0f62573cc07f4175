import { AnchorLink } from '../../components/links';
import { Button, Group, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useDebouncedCallback } from '@mantine/hooks';
import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { StatusBadge } from '../../components/StatusBadge';
import { formatTime } from '../../lib/format';
import { useOrgSlug } from '../../lib/org';
import { keys, webhooksQuery } from '../../lib/queries';
import { LiveBadge } from '../OrgLayout';
import { LEDGER_STATUSES, type LedgerFilters } from './ledger-search';

/** A delivery is `accepted` only when it made an action: the action's status is the row's. */
const STATUSES = LEDGER_STATUSES.filter((status) => status !== 'accepted');
const PAGE_SIZE = 50;

function useWebhookOptions(org: string) {
  const { data } = useQuery(webhooksQuery(org));
  return (data ?? []).map((webhook) => ({ value: webhook.id, label: webhook.name }));
}

/** Spec 2.8: every action and delivery, newest first, filtered, paged by cursor, live. */
export function LedgerPage() {
  const org = useOrgSlug();
  const filters = useSearch({ from: '/signed-in/o/$org/admin/ledger' });
  const navigate = useNavigate({ from: '/o/$org/ledger' });
  const webhooks = useWebhookOptions(org);
  const setFilter = (patch: Partial<LedgerFilters>) =>
    void navigate({ search: (previous) => ({ ...previous, ...patch }), replace: true });
  const setText = useDebouncedCallback((patch: Partial<LedgerFilters>) => setFilter(patch), 300);

  const ledger = useInfiniteQuery({
    queryKey: [...keys.ledger(org), filters],
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET('/orgs/{org}/ledger', { params: { path: { org }, query: { ...filters, limit: PAGE_SIZE, cursor: pageParam } } }),
      ),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.nextCursor ?? undefined,
  });
  const rows = ledger.data?.pages.flatMap((page) => page.rows) ?? [];

  return (
    <Stack>
      <Group justify="space-between">
        <Group gap="sm">
          <Title order={1} size="h2">
            Ledger
          </Title>
          <LiveBadge />
        </Group>
      </Group>
      <Group gap="sm" align="flex-end" role="search" aria-label="Ledger filters">
        <TextInput
          label="Search"
          placeholder="External id, event type, summary"
          defaultValue={filters.q ?? ''}
          onChange={(event) => setText({ q: event.currentTarget.value || undefined })}
          w={260}
        />
        <Select
          label="Kind"
          placeholder="All"
          clearable
          data={[
            { value: 'action', label: 'Actions' },
            { value: 'delivery', label: 'Deliveries' },
          ]}
          value={filters.kind ?? null}
          onChange={(value) => setFilter({ kind: (value as LedgerFilters['kind']) ?? undefined })}
          w={140}
        />
        <Select
          label="Status"
          placeholder="Any"
          clearable
          data={STATUSES}
          value={filters.status ?? null}
          onChange={(value) => setFilter({ status: (value as LedgerFilters['status']) ?? undefined })}
          w={170}
        />
        <Select
          label="Webhook"
          placeholder="Any"
          clearable
          data={webhooks}
          value={filters.webhookId ?? null}
          onChange={(value) => setFilter({ webhookId: value ?? undefined })}
          w={200}
        />
        <TextInput
          label="Event type"
          placeholder="e.g. issue.created"
          defaultValue={filters.eventType ?? ''}
          onChange={(event) => setText({ eventType: event.currentTarget.value || undefined })}
          w={180}
        />
      </Group>
      {ledger.error ? (
        <QueryError error={ledger.error} />
      ) : (
        <Table highlightOnHover verticalSpacing="xs" aria-label="Ledger rows" aria-busy={ledger.isPending}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Received</Table.Th>
              <Table.Th>Kind</Table.Th>
              <Table.Th>Summary</Table.Th>
              <Table.Th>Event type</Table.Th>
              <Table.Th>Status</Table.Th>
              <Table.Th>Approval</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((row) => (
              <Table.Tr
                key={row.id}
                data-row-id={row.id}
                style={{ cursor: 'pointer' }}
                onClick={() => void navigate({ to: '/o/$org/ledger/$id', params: { org, id: row.id } })}
              >
                <Table.Td>
                  <Text size="sm" c="dimmed">
                    {formatTime(row.createdAt)}
                  </Text>
                </Table.Td>
                <Table.Td>{row.kind}</Table.Td>
                <Table.Td>
                  <AnchorLink
                    to="/o/$org/ledger/$id"
                    params={{ org, id: row.id }}
                    size="sm"
                    c="inherit"
                    onClick={(event: React.MouseEvent) => event.stopPropagation()}
                  >
                    {row.summary}
                  </AnchorLink>
                </Table.Td>
                <Table.Td>{row.eventType ?? '—'}</Table.Td>
                <Table.Td>
                  <StatusBadge status={row.status} />
                </Table.Td>
                <Table.Td>
                  <StatusBadge status={row.approvalState} />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {!ledger.isPending && rows.length === 0 && !ledger.error && (
        <Text c="dimmed" ta="center">
          Nothing here yet. Events sent to your webhooks appear as they arrive.
        </Text>
      )}
      {ledger.hasNextPage && (
        <Button variant="default" onClick={() => void ledger.fetchNextPage()} loading={ledger.isFetchingNextPage} mx="auto">
          Older rows
        </Button>
      )}
    </Stack>
  );
}
