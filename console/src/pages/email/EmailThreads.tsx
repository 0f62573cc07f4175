import { EmptyState } from '../../components/FormParts';
import { Button, Stack, Table } from '@mantine/core';
import { useInfiniteQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { AnchorLink } from '../../components/links';
import { QueryError } from '../../components/RouteError';
import { formatTime } from '../../lib/format';
import { keys } from '../../lib/queries';

/** The org's email threads, most recent activity first. */
export function EmailThreads({ org }: { org: string }) {
  const threads = useInfiniteQuery({
    queryKey: [...keys.org(org), 'email-threads'],
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/orgs/{org}/email/threads', { params: { path: { org }, query: { limit: 50, cursor: pageParam } } })),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (page) => page.nextCursor ?? undefined,
  });
  const rows = threads.data?.pages.flatMap((page) => page.threads) ?? [];
  if (threads.error) return <QueryError error={threads.error} />;
  return (
    <Stack>
      {threads.isSuccess && rows.length === 0 && <EmptyState>No email yet.</EmptyState>}
      {rows.length > 0 && (
        <Table highlightOnHover aria-label="Email threads">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Subject</Table.Th>
              <Table.Th>Started by</Table.Th>
              <Table.Th>Messages</Table.Th>
              <Table.Th>Last activity</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((thread) => (
              <Table.Tr key={thread.id}>
                <Table.Td>
                  <AnchorLink to="/o/$org/email/threads/$id" params={{ org, id: thread.id }}>
                    {thread.subject || '(no subject)'}
                  </AnchorLink>
                </Table.Td>
                <Table.Td>{thread.startedBy}</Table.Td>
                <Table.Td>{thread.messageCount}</Table.Td>
                <Table.Td>{formatTime(thread.updatedAt)}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      {threads.hasNextPage && (
        <Button variant="default" mx="auto" onClick={() => void threads.fetchNextPage()} loading={threads.isFetchingNextPage}>
          Older threads
        </Button>
      )}
    </Stack>
  );
}
