import { Badge, Button, Code, Group, Select, Stack, Table, Text, Title } from '@mantine/core';
import { modals } from '@mantine/modals';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { UserName } from '../../components/UserName';
import { formatTime, prettyJson } from '../../lib/format';
import { keys, versionsQuery } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';

const LINE_COLORS = { add: 'var(--mantine-color-green-1)', remove: 'var(--mantine-color-red-1)', keep: undefined } as const;
const LINE_MARKS = { add: '+ ', remove: '- ', keep: '  ' } as const;

/** An agent's versions: who made each and when, publish or roll back, an experiment of one, a diff of any two. */
export function VersionsSection(props: {
  org: string;
  agentId: string;
  liveVersion: number;
  onExperiment: (version: number) => void;
}) {
  const { org, agentId, liveVersion } = props;
  const queryClient = useQueryClient();
  const versions = useQuery(versionsQuery(org, agentId));
  const { failed, succeeded } = pageNotices('agent-versions');
  const publish = useMutation({
    mutationFn: (version: number) =>
      unwrap(
        api.POST('/orgs/{org}/agents/{agentId}/versions/{version}/publish', { params: { path: { org, agentId, version } } }),
      ),
    onSuccess: (agent) => {
      succeeded(`Version ${agent.liveVersion} is live`);
      void queryClient.invalidateQueries({ queryKey: keys.org(org) });
    },
    onError: failed('Not published'),
  });
  const confirmPublish = (version: number) =>
    modals.openConfirmModal({
      title: version < liveVersion ? `Roll back to version ${version}?` : `Publish version ${version}?`,
      children: <Text size="sm">New actions run with it; actions already created keep the version they started with.</Text>,
      labels: { confirm: version < liveVersion ? 'Roll back' : 'Publish', cancel: 'Cancel' },
      onConfirm: () => publish.mutate(version),
    });
  const numbers = (versions.data ?? []).map((item) => String(item.version));
  const [compare, setCompare] = useState<{ version: string | null; against: string | null }>({ version: null, against: null });
  const version = compare.version ?? numbers[0] ?? null;
  const against = compare.against ?? (String(liveVersion) === version ? (numbers[1] ?? null) : String(liveVersion));

  return (
    <Stack>
      <Title order={2} size="h3">
        Versions
      </Title>
      {versions.error && <QueryError error={versions.error} />}
      <Table aria-label="Versions">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Version</Table.Th>
            <Table.Th>Made</Table.Th>
            <Table.Th>By</Table.Th>
            <Table.Th>Change note</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {versions.data?.map((item) => (
            <Table.Tr key={item.version}>
              <Table.Td>
                <Group gap="xs">
                  <Text fw={600}>v{item.version}</Text>
                  {item.live && (
                    <Badge color="green" variant="dot" tt="none">
                      live
                    </Badge>
                  )}
                  {!item.live && item.lastPublishedAt === null && <Badge variant="outline">draft</Badge>}
                  {!item.live && item.lastPublishedAt !== null && (
                    <Text size="xs" c="dimmed">
                      was live from {formatTime(item.lastPublishedAt)}
                      {item.lastReplacedAt !== null && ` to ${formatTime(item.lastReplacedAt)}`}
                    </Text>
                  )}
                </Group>
              </Table.Td>
              <Table.Td>{formatTime(item.createdAt)}</Table.Td>
              <Table.Td>
                <UserName org={org} userId={item.createdBy} />
              </Table.Td>
              <Table.Td>{item.changeNote ?? '—'}</Table.Td>
              <Table.Td>
                <Group gap="xs" justify="flex-end">
                  <Button size="compact-sm" variant="default" onClick={() => props.onExperiment(item.version)}>
                    Experiment
                  </Button>
                  {!item.live && (
                    <Button
                      size="compact-sm"
                      onClick={() => confirmPublish(item.version)}
                      aria-label={
                        item.version < liveVersion ? `Roll back to version ${item.version}` : `Publish version ${item.version}`
                      }
                    >
                      {item.version < liveVersion ? 'Roll back' : 'Publish'}
                    </Button>
                  )}
                </Group>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {numbers.length > 1 && version && against && (
        <VersionDiff
          org={org}
          agentId={agentId}
          numbers={numbers}
          version={version}
          against={against}
          onChange={(next) => setCompare({ version, against, ...next })}
        />
      )}
    </Stack>
  );
}

function VersionDiff(props: {
  org: string;
  agentId: string;
  numbers: string[];
  version: string;
  against: string;
  onChange: (next: { version?: string; against?: string }) => void;
}) {
  const { org, agentId } = props;
  const diff = useQuery({
    queryKey: [...keys.org(org), 'agents', agentId, 'diff', props.version, props.against],
    queryFn: () =>
      unwrap(
        api.GET('/orgs/{org}/agents/{agentId}/versions/{version}/diff', {
          params: { path: { org, agentId, version: Number(props.version) }, query: { against: Number(props.against) } },
        }),
      ),
  });
  const data = props.numbers.map((value) => ({ value, label: `v${value}` }));
  return (
    <Stack gap="xs" aria-label="Diff" role="region">
      <Group>
        <Select
          label="Compare"
          data={data}
          value={props.version}
          onChange={(value) => value && props.onChange({ version: value })}
        />
        <Select
          label="with"
          data={data}
          value={props.against}
          onChange={(value) => value && props.onChange({ against: value })}
        />
      </Group>
      {diff.error && <QueryError error={diff.error} />}
      {diff.data?.changes.length === 0 && <Text c="dimmed">The two versions do the same.</Text>}
      {diff.data?.changes.map((change) => (
        <Stack key={change.field} gap={4}>
          <Text fw={600}>{change.field}</Text>
          {change.lines ? (
            <Code block>
              {change.lines.map((line, index) => (
                // biome-ignore lint/suspicious/noArrayIndexKey: a diff's lines never reorder: the position is the identity
                <div key={`${index}-${line.op}`} style={{ background: LINE_COLORS[line.op] }}>
                  {LINE_MARKS[line.op]}
                  {line.text}
                </div>
              ))}
            </Code>
          ) : (
            <Text size="sm" ff="monospace">
              {prettyJson(change.from)} → {prettyJson(change.to)}
            </Text>
          )}
        </Stack>
      ))}
    </Stack>
  );
}
