import { EmptyState } from '../../components/FormParts';
import { Button, Stack, Table } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { formatTime } from '../../lib/format';
import { keys } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';

/** Addresses sendEmail refuses (a permanent bounce or a complaint); an Admin may take one off. */
export function Suppressions({ org, canRemove }: { org: string; canRemove: boolean }) {
  const queryClient = useQueryClient();
  const queryKey = [...keys.org(org), 'suppressions'];
  const list = useQuery({
    queryKey,
    queryFn: () => unwrap(api.GET('/orgs/{org}/email/suppressions', { params: { path: { org }, query: { limit: 200 } } })),
  });
  const { failed, succeeded } = pageNotices('suppressions');
  const remove = useMutation({
    mutationFn: (address: string) =>
      unwrap(api.DELETE('/orgs/{org}/email/suppressions/{address}', { params: { path: { org, address } } })),
    onSuccess: () => succeeded(),
    onError: failed('Not removed'),
    onSettled: () => void queryClient.invalidateQueries({ queryKey }),
  });
  if (list.error) return <QueryError error={list.error} />;
  const rows = list.data?.suppressions ?? [];
  return (
    <Stack>
      {list.isSuccess && rows.length === 0 && <EmptyState>No suppressed addresses.</EmptyState>}
      {rows.length > 0 && (
        <Table aria-label="Suppressed addresses">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Address</Table.Th>
              <Table.Th>Why</Table.Th>
              <Table.Th>Since</Table.Th>
              <Table.Th />
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((row) => (
              <Table.Tr key={row.address}>
                <Table.Td ff="monospace">{row.address}</Table.Td>
                <Table.Td>
                  {row.reason}
                  {row.detail ? `: ${row.detail}` : ''}
                </Table.Td>
                <Table.Td>{formatTime(row.createdAt)}</Table.Td>
                <Table.Td>
                  {canRemove && (
                    <Button size="compact-xs" variant="subtle" color="red" onClick={() => remove.mutate(row.address)}>
                      Remove
                    </Button>
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
