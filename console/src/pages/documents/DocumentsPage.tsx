import { EmptyState } from '../../components/FormParts';
import { Anchor, Stack, Table, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { AnchorLink } from '../../components/links';
import { QueryError } from '../../components/RouteError';
import { fileSize, formatTime } from '../../lib/format';
import { useOrgSlug } from '../../lib/org';
import { keys, meQuery } from '../../lib/queries';

/**
 * The PDFs agents wrote (generateDocument), each downloaded by its title. Admins, who see
 * the ledger, also get the action that wrote each one.
 */
export function DocumentsPage() {
  const org = useOrgSlug();
  const isAdmin = useQuery(meQuery).data?.role === 'Admin';
  const documents = useQuery({
    queryKey: [...keys.org(org), 'documents'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/documents', { params: { path: { org }, query: { limit: 100 } } })),
  });
  const rows = documents.data?.documents ?? [];
  return (
    <Stack>
      <Title order={1} size="h2">
        Documents
      </Title>
      {documents.error && <QueryError error={documents.error} />}
      {documents.isSuccess && rows.length === 0 && (
        <EmptyState>No documents yet. Agents write them with the generateDocument tool.</EmptyState>
      )}
      {rows.length > 0 && (
        <Table aria-label="Documents">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Title</Table.Th>
              <Table.Th>Size</Table.Th>
              <Table.Th>Created</Table.Th>
              {isAdmin && <Table.Th>Written by</Table.Th>}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {rows.map((document) => (
              <Table.Tr key={document.id}>
                <Table.Td>
                  <Anchor href={`/orgs/${encodeURIComponent(org)}/documents/${document.id}`} target="_blank" rel="noopener">
                    {document.title}
                  </Anchor>
                </Table.Td>
                <Table.Td>{fileSize(document.sizeBytes)}</Table.Td>
                <Table.Td>{formatTime(document.createdAt)}</Table.Td>
                {isAdmin && (
                  <Table.Td>
                    {document.actionId ? (
                      <AnchorLink to="/o/$org/ledger/$id" params={{ org, id: document.actionId }} size="sm">
                        {document.agentName ? `${document.agentName}'s action` : 'its action'}
                      </AnchorLink>
                    ) : (
                      '—'
                    )}
                  </Table.Td>
                )}
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </Stack>
  );
}
