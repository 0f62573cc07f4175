import { Badge, Button, Card, Code, Group, Modal, Stack, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { FormError } from '../../components/FormParts';
import { agentModel, counted } from '../../lib/format';
import { pageNotices } from '../../lib/notices';
import { agentQuery, keys } from '../../lib/queries';
import { AgentForm, type AgentValues, agentValues, toAgentBody, toDraftBody } from './AgentForm';
import { ExperimentsSection } from './ExperimentsSection';
import { VersionsSection } from './VersionsSection';

/** One agent: edit it (publish at once, or save a draft), its versions, and experiments of them on past actions. */
export function AgentDetailPage() {
  const { org, id } = useParams({ from: '/signed-in/o/$org/admin/agents/$id' });
  const queryClient = useQueryClient();
  const agent = useQuery(agentQuery(org, id));
  const [editing, setEditing] = useState(false);
  const [starting, setStarting] = useState<number | null>(null);
  const { succeeded } = pageNotices('agent');
  const saved = (message: string) => {
    setEditing(false);
    succeeded(message);
    void queryClient.invalidateQueries({ queryKey: keys.org(org) });
  };
  // Each attempt takes the other's refusal away: the dialog says why its last attempt was refused.
  const publish = useMutation({
    mutationFn: (values: AgentValues) =>
      unwrap(api.PATCH('/orgs/{org}/agents/{agentId}', { params: { path: { org, agentId: id } }, body: toAgentBody(values) })),
    onMutate: () => {
      draft.reset();
    },
    onSuccess: (updated) => saved(`Saved; version ${updated.liveVersion} is live`),
  });
  const draft = useMutation({
    mutationFn: (values: AgentValues) =>
      unwrap(
        api.POST('/orgs/{org}/agents/{agentId}/versions', { params: { path: { org, agentId: id } }, body: toDraftBody(values) }),
      ),
    onMutate: () => {
      publish.reset();
    },
    onSuccess: ({ version }) => saved(`Saved as draft: version ${version.version}, not live`),
  });
  if (agent.error) return <QueryError error={agent.error} />;
  if (!agent.data) return null;
  const { data } = agent;
  return (
    <Stack gap="xl">
      <Group justify="space-between">
        <Stack gap={4}>
          <Title order={1} size="h2">
            {data.name}
          </Title>
          <Group gap="xs">
            <Badge color="green" variant="dot" tt="none">
              live: version {data.liveVersion}
            </Badge>
            <Text size="sm" c="dimmed">
              {agentModel(data)} · {counted(data.tools.length, 'tool')}
            </Text>
          </Group>
        </Stack>
        <Button onClick={() => setEditing(true)}>Edit</Button>
      </Group>
      <Card withBorder aria-label="What the live version does" role="region">
        <Stack gap="xs">
          <Text size="sm" fw={600}>
            Instructions
          </Text>
          {data.instructions ? (
            <Text size="sm" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }} lineClamp={12}>
              {data.instructions}
            </Text>
          ) : (
            <Text size="sm" c="dimmed">
              None: the model gets the rule's instructions and the event alone.
            </Text>
          )}
          <Text size="sm" fw={600}>
            Tools
          </Text>
          {data.tools.length > 0 ? (
            <Group gap="xs">
              {data.tools.map((tool) => (
                <Code key={tool}>{tool}</Code>
              ))}
            </Group>
          ) : (
            <Text size="sm" c="dimmed">
              None: it answers in words only.
            </Text>
          )}
        </Stack>
      </Card>
      <VersionsSection org={org} agentId={id} liveVersion={data.liveVersion} onExperiment={setStarting} />
      <ExperimentsSection
        org={org}
        agentId={id}
        starting={starting}
        onStart={() => setStarting(data.liveVersion)}
        onClose={() => setStarting(null)}
      />
      <Modal
        opened={editing}
        onClose={() => {
          setEditing(false);
          publish.reset();
          draft.reset();
        }}
        title={`Edit ${data.name}`}
        size="lg"
      >
        <AgentForm
          org={org}
          initial={agentValues(data)}
          submitLabel="Save and publish"
          busy={publish.isPending || draft.isPending}
          onSubmit={(values) => publish.mutate(values)}
          onDraft={(values) => draft.mutate(values)}
          refusal={
            <FormError title={publish.error ? 'Agent not saved' : 'Draft not saved'} error={publish.error ?? draft.error} />
          }
        />
      </Modal>
    </Stack>
  );
}
