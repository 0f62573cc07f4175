import { Badge, Button, Card, Group, Progress, SegmentedControl, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { AnchorLink } from '../../components/links';
import { QueryError } from '../../components/RouteError';
import { StatusBadge } from '../../components/StatusBadge';
import { actionName, counted, usd } from '../../lib/format';
import { agentQuery, keys } from '../../lib/queries';
import { outcomeLine, unfinished } from './ExperimentsSection';
import { ResultComparison } from './ResultComparison';
import { pageNotices } from '../../lib/notices';

const OUTCOMES = ['all', 'changed', 'same', 'failed'] as const;
type Outcome = (typeof OUTCOMES)[number];

/** An experiment: its progress while it runs, what changed in sum, and each action's baseline beside the candidate. */
export function ExperimentPage() {
  const { org, id } = useParams({ from: '/signed-in/o/$org/admin/experiments/$id' });
  const queryClient = useQueryClient();
  const [outcome, setOutcome] = useState<Outcome>('all');
  const [selected, setSelected] = useState<string | null>(null);
  const experiment = useQuery({
    queryKey: [...keys.org(org), 'experiment', id, outcome],
    queryFn: () =>
      unwrap(
        api.GET('/orgs/{org}/experiments/{experimentId}', {
          params: { path: { org, experimentId: id }, query: { limit: 200, ...(outcome !== 'all' && { outcome }) } },
        }),
      ),
    refetchInterval: (query) => (unfinished(query.state.data?.experiment.state ?? '') ? 1000 : false),
  });
  const agentId = experiment.data?.experiment.agentId;
  const agent = useQuery({ ...agentQuery(org, agentId ?? ''), enabled: agentId !== undefined });
  const refresh = () => queryClient.invalidateQueries({ queryKey: keys.org(org) });
  const { failed, succeeded } = pageNotices('experiment');
  const cancel = useMutation({
    mutationFn: () =>
      unwrap(api.POST('/orgs/{org}/experiments/{experimentId}/cancel', { params: { path: { org, experimentId: id } } })),
    onSuccess: () => {
      succeeded();
      void refresh();
    },
    onError: failed('Not cancelled'),
  });
  const publish = useMutation({
    mutationFn: (input: { agentId: string; version: number }) =>
      unwrap(api.POST('/orgs/{org}/agents/{agentId}/versions/{version}/publish', { params: { path: { org, ...input } } })),
    onSuccess: (published) => {
      succeeded(`Version ${published.liveVersion} is live`);
      void refresh();
    },
    onError: failed('Not published'),
  });
  if (experiment.error) return <QueryError error={experiment.error} />;
  if (!experiment.data) return null;
  const { experiment: item, summary, results } = experiment.data;
  const running = unfinished(item.state);
  const chosen = results.find((result) => result.actionId === selected);
  return (
    <Stack gap="lg">
      <Group justify="space-between">
        <Stack gap={4}>
          <Title order={1} size="h2">
            Experiment:{' '}
            {agent.data ? (
              <AnchorLink to="/o/$org/agents/$id" params={{ org, id: item.agentId }}>
                {agent.data.name}
              </AnchorLink>
            ) : (
              'agent'
            )}{' '}
            version {item.version}
          </Title>
          <Group gap="xs">
            <StatusBadge status={item.state} />
            {item.error && <Text size="sm">{item.error}</Text>}
          </Group>
        </Stack>
        <Group>
          {running && (
            <Button color="red" variant="light" loading={cancel.isPending} onClick={() => cancel.mutate()}>
              Cancel
            </Button>
          )}
          {agent.data && agent.data.liveVersion !== item.version && (
            <Button loading={publish.isPending} onClick={() => publish.mutate({ agentId: item.agentId, version: item.version })}>
              Publish version {item.version}
            </Button>
          )}
          {agent.data?.liveVersion === item.version && (
            <Badge color="green" variant="dot" tt="none">
              version {item.version} is live
            </Badge>
          )}
        </Group>
      </Group>
      <Group gap="sm" wrap="nowrap">
        <Progress value={(100 * item.progress.done) / item.progress.total} style={{ flex: 1 }} size="lg" aria-label="Progress" />
        <Text size="sm">
          {item.progress.done} of {item.progress.total} actions
        </Text>
      </Group>
      <SimpleGrid cols={{ base: 1, sm: 3 }}>
        <Card withBorder>
          <Text size="sm" c="dimmed">
            Outcomes
          </Text>
          <Text>{outcomeLine(summary.outcomes)}</Text>
        </Card>
        {(['baseline', 'candidate'] as const).map((side) => (
          <Card withBorder key={side}>
            <Text size="sm" c="dimmed">
              {side === 'baseline' ? 'The original runs' : `Version ${item.version}`}
            </Text>
            <Text>
              {[
                counted(summary[side].inputTokens + summary[side].outputTokens, 'token'),
                `cost ${usd(summary[side].costUsd)}`,
                counted(summary[side].approvalsNeeded, 'approval'),
              ].join(' · ')}
            </Text>
          </Card>
        ))}
      </SimpleGrid>
      <SegmentedControl
        aria-label="Outcome"
        value={outcome}
        onChange={(value) => setOutcome(value as Outcome)}
        data={OUTCOMES.map((value) => ({ value, label: value }))}
        w="fit-content"
      />
      <Table aria-label="Results" highlightOnHover>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Action</Table.Th>
            <Table.Th>Outcome</Table.Th>
            <Table.Th>Differences</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {results.map((result) => (
            <Table.Tr
              key={result.actionId}
              onClick={() => setSelected(result.actionId)}
              style={{ cursor: 'pointer' }}
              bg={result.actionId === selected ? 'var(--mantine-color-blue-light)' : undefined}
            >
              <Table.Td>
                <Button variant="subtle" size="compact-sm" onClick={() => setSelected(result.actionId)}>
                  {actionName(result)}
                </Button>
              </Table.Td>
              <Table.Td>
                <StatusBadge status={result.outcome} />
              </Table.Td>
              <Table.Td>
                <Text size="sm">
                  {[...new Set(result.differences.map((difference) => difference.kind.replaceAll('_', ' ')))].join(', ') || '—'}
                </Text>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {chosen && <ResultComparison org={org} result={chosen} version={item.version} />}
    </Stack>
  );
}
