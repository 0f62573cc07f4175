import { Badge, Button, Card, Group, Modal, Stack, Text, Title } from '@mantine/core';
import { modals } from '@mantine/modals';
import { queryOptions, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { EmptyState } from '../../components/FormParts';
import { QueryError } from '../../components/RouteError';
import { counted, formatTime } from '../../lib/format';
import { useOrgSlug } from '../../lib/org';
import { keys } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';
import { McpServerForm } from './McpServerForm';
import { McpToolsTable } from './McpToolsTable';

const mcpServersQuery = (org: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'mcp-servers'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/mcp-servers', { params: { path: { org } } })).then((body) => body.mcpServers),
  });

/** The org's MCP servers: its own systems, whose tools its agents can be given as server__tool. */
export function McpServersPage() {
  const org = useOrgSlug();
  const queryClient = useQueryClient();
  const servers = useQuery(mcpServersQuery(org));
  const [adding, setAdding] = useState(false);
  // The org's tools (agents' and rules' forms) change with its servers.
  const { failed, succeeded } = pageNotices('mcp-servers');
  const changed = (message: string) => {
    succeeded(message);
    void queryClient.invalidateQueries({ queryKey: keys.org(org) });
  };
  const refresh = useMutation({
    mutationFn: (id: string) => unwrap(api.POST('/orgs/{org}/mcp-servers/{id}/refresh', { params: { path: { org, id } } })),
    onSuccess: (server) => changed(`${server.name}: ${counted(server.tools.length, 'tool')} listed`),
    onError: failed('Not refreshed'),
  });
  const remove = useMutation({
    mutationFn: (id: string) => unwrap(api.DELETE('/orgs/{org}/mcp-servers/{id}', { params: { path: { org, id } } })),
    onSuccess: () => changed('Server disconnected'),
    onError: failed('Not deleted'),
  });
  const confirmDelete = (id: string, name: string) =>
    modals.openConfirmModal({
      title: `Disconnect ${name}?`,
      children: <Text size="sm">Its tools are no longer offered: agents that list them lose them.</Text>,
      labels: { confirm: 'Disconnect', cancel: 'Cancel' },
      confirmProps: { color: 'red' },
      onConfirm: () => remove.mutate(id),
    });

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          MCP servers
        </Title>
        <Button onClick={() => setAdding(true)}>Connect a server</Button>
      </Group>
      <Text size="sm" c="dimmed">
        The organization's own systems as tools. Agents are given them like built-in tools, under the same approval modes; a call
        to a tool that is neither read-only nor idempotent is never repeated after a crash without a human.
      </Text>
      {servers.error && <QueryError error={servers.error} />}
      {servers.data?.length === 0 && <EmptyState>No MCP servers yet.</EmptyState>}
      {servers.data?.map((server) => (
        <Card key={server.id} withBorder aria-label={`MCP server ${server.name}`} component="section">
          <Stack gap="xs">
            <Group justify="space-between" align="flex-start">
              <Stack gap={2}>
                <Group gap="xs">
                  <Text fw={600} ff="monospace">
                    {server.name}
                  </Text>
                  {server.serverInfo && (
                    <Badge variant="light" tt="none">
                      {server.serverInfo.name} {server.serverInfo.version}
                    </Badge>
                  )}
                  {server.auth && (
                    <Badge variant="outline" tt="none">
                      OAuth client {server.auth.clientId}
                    </Badge>
                  )}
                </Group>
                <Text size="sm" ff="monospace">
                  {server.url}
                </Text>
                <Text size="xs" c="dimmed">
                  {Object.entries(server.headerHints)
                    .map(([name, hint]) => `${name}: ${hint}`)
                    .join(' · ') || 'No headers'}
                  {server.auth && ` · client secret ${server.auth.clientSecretHint}`}
                  {server.toolsListedAt && ` · tools listed ${formatTime(server.toolsListedAt)}`}
                </Text>
              </Stack>
              <Group gap="xs">
                <Button
                  size="compact-sm"
                  variant="default"
                  loading={refresh.isPending && refresh.variables === server.id}
                  onClick={() => refresh.mutate(server.id)}
                >
                  Refresh tools
                </Button>
                <Button size="compact-sm" color="red" variant="subtle" onClick={() => confirmDelete(server.id, server.name)}>
                  Delete
                </Button>
              </Group>
            </Group>
            <McpToolsTable tools={server.tools} />
          </Stack>
        </Card>
      ))}
      <Modal opened={adding} onClose={() => setAdding(false)} title="Connect an MCP server" size="xl">
        <McpServerForm
          org={org}
          onSaved={() => {
            setAdding(false);
            changed('Server connected');
          }}
        />
      </Modal>
    </Stack>
  );
}
