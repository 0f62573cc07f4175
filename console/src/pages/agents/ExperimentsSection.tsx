import { Button, Checkbox, Group, NumberInput, Progress, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { Dialog } from '../../components/Dialog';
import { EmptyState, FormError } from '../../components/FormParts';
import { AnchorLink } from '../../components/links';
import { QueryError } from '../../components/RouteError';
import { StatusBadge } from '../../components/StatusBadge';
import { formatTime } from '../../lib/format';
import { experimentsQuery, keys } from '../../lib/queries';

const ENDINGS = ['completed', 'failed', 'rejected', 'expired'] as const;
/** An experiment still replaying (or about to): its page and list refresh while it is. */
export const unfinished = (state: string) => state === 'queued' || state === 'running';
/** An experiment's results stored so far, per outcome, in one line. */
export const outcomeLine = (outcomes: { same: number; changed: number; failed: number }) =>
  `${outcomes.changed} changed · ${outcomes.same} same · ${outcomes.failed} failed`;

/** The agent's experiments, with their progress while they run, and a form to start one from a version. */
export function ExperimentsSection(props: {
  org: string;
  agentId: string;
  starting: number | null;
  onClose: () => void;
  onStart: () => void;
}) {
  const { org, agentId } = props;
  const experiments = useQuery({
    ...experimentsQuery(org, agentId),
    refetchInterval: (query) => (query.state.data?.some((item) => unfinished(item.state)) ? 1000 : false),
  });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2} size="h3">
          Experiments
        </Title>
        <Button variant="light" onClick={props.onStart}>
          Run an experiment
        </Button>
      </Group>
      {experiments.error && <QueryError error={experiments.error} />}
      {experiments.data?.length === 0 && (
        <EmptyState>No experiments yet: replay a version on past actions before it goes live.</EmptyState>
      )}
      {(experiments.data?.length ?? 0) > 0 && (
        <Table aria-label="Experiments">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Started</Table.Th>
              <Table.Th>Version</Table.Th>
              <Table.Th>State</Table.Th>
              <Table.Th>Progress</Table.Th>
              <Table.Th>Outcomes</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {experiments.data?.map((item) => (
              <Table.Tr key={item.id}>
                <Table.Td>
                  <AnchorLink to="/o/$org/experiments/$id" params={{ org, id: item.id }}>
                    {formatTime(item.createdAt)}
                  </AnchorLink>
                </Table.Td>
                <Table.Td>v{item.version}</Table.Td>
                <Table.Td>
                  <StatusBadge status={item.state} />
                </Table.Td>
                <Table.Td>
                  <Group gap="xs" wrap="nowrap">
                    <Progress value={(100 * item.progress.done) / item.progress.total} w={160} aria-label="Progress" />
                    <Text size="sm">
                      {item.progress.done} of {item.progress.total}
                    </Text>
                  </Group>
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{outcomeLine(item.outcomes)}</Text>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
      <Dialog value={props.starting} onClose={props.onClose} title={() => 'Run an experiment'} size="lg">
        {(version) => <StartForm org={org} agentId={agentId} version={version} />}
      </Dialog>
    </Stack>
  );
}

function StartForm({ org, agentId, version }: { org: string; agentId: string; version: number }) {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [limit, setLimit] = useState<number>(50);
  const [eventType, setEventType] = useState('');
  const [status, setStatus] = useState<string | null>(null);
  const [liveReadOnlyTools, setLiveReadOnlyTools] = useState(false);
  const start = useMutation({
    mutationFn: () =>
      unwrap(
        api.POST('/orgs/{org}/agents/{agentId}/experiments', {
          params: { path: { org, agentId } },
          body: {
            version,
            limit,
            liveReadOnlyTools,
            ...((eventType.trim() || status) && {
              filter: {
                ...(eventType.trim() && { eventType: eventType.trim() }),
                ...(status && { status: status as (typeof ENDINGS)[number] }),
              },
            }),
          },
        }),
      ),
    onSuccess: ({ experiment }) => {
      void queryClient.invalidateQueries({ queryKey: keys.org(org) });
      void navigate({ to: '/o/$org/experiments/$id', params: { org, id: experiment.id } });
    },
  });
  return (
    <Stack>
      <Text size="sm">
        Version {version} runs again on the agent's past actions, on the same input, with the model called for real. No tool is
        executed: a call the original made with the same arguments gets its recorded result, any other a stand-in. Nothing is
        sent, stored or changed; the model's calls count as usage and against the budgets.
      </Text>
      <NumberInput
        label="Past actions, newest first"
        min={1}
        max={500}
        value={limit}
        onChange={(value) => setLimit(Number(value) || 1)}
      />
      <Group grow>
        <TextInput
          label="Event type"
          placeholder="Any"
          value={eventType}
          onChange={(event) => setEventType(event.currentTarget.value)}
        />
        <Select label="How they ended" placeholder="Any" clearable data={[...ENDINGS]} value={status} onChange={setStatus} />
      </Group>
      <Checkbox
        label="Call read-only MCP tools for real (lookups)"
        checked={liveReadOnlyTools}
        onChange={(event) => setLiveReadOnlyTools(event.currentTarget.checked)}
      />
      <FormError error={start.error} />
      <Group justify="flex-end">
        <Button loading={start.isPending} onClick={() => start.mutate()}>
          Start
        </Button>
      </Group>
    </Stack>
  );
}
