import { Badge, Button, Card, Code, Group, Stack, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from '@tanstack/react-router';
import { useMemo, useState } from 'react';
import { QueryError } from '../../components/RouteError';
import { agentModel, counted } from '../../lib/format';
import { pageNotices } from '../../lib/notices';
import { agentQuery, keys } from '../../lib/queries';
import { AgentDialog } from './AgentDialog';
import { agentValues } from './AgentForm';
import { ExperimentsSection } from './ExperimentsSection';
import { VersionsSection } from './VersionsSection';

/** One agent: edit it (publish at once, or save a draft), its versions, and experiments of them on past actions. */
export function AgentDetailPage() {
  const { org, id } = useParams({ from: '/signed-in/o/$org/admin/agents/$id' });
  const queryClient = useQueryClient();
  const agent = useQuery(agentQuery(org, id));
  const [editing, setEditing] = useState(false);
  const [starting, setStarting] = useState<number | null>(null);
  // Built once per loaded agent, not at every render: the dialog follows a changed value while open.
  const edited = useMemo(
    () => (agent.data ? { agent: { id, name: agent.data.name, initial: agentValues(agent.data) } } : null),
    [agent.data, id],
  );
  const { succeeded } = pageNotices('agent');
  const saved = (message: string) => {
    succeeded(message);
    void queryClient.invalidateQueries({ queryKey: keys.org(org) });
  };
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
      <LiveVersion instructions={data.instructions} tools={data.tools} />
      <VersionsSection org={org} agentId={id} liveVersion={data.liveVersion} onExperiment={setStarting} />
      <ExperimentsSection
        org={org}
        agentId={id}
        starting={starting}
        onStart={() => setStarting(data.liveVersion)}
        onClose={() => setStarting(null)}
      />
      <AgentDialog org={org} editing={editing ? edited : null} onClose={() => setEditing(false)} onSaved={saved} />
    </Stack>
  );
}

/** What the live version does: its instructions and its tools. */
function LiveVersion({ instructions, tools }: { instructions: string; tools: string[] }) {
  return (
    <Card withBorder aria-label="What the live version does" role="region">
      <Stack gap="xs">
        <Text size="sm" fw={600}>
          Instructions
        </Text>
        {instructions ? (
          <Text size="sm" style={{ whiteSpace: 'pre-wrap', overflowWrap: 'anywhere' }} lineClamp={12}>
            {instructions}
          </Text>
        ) : (
          <Text size="sm" c="dimmed">
            None: the model gets the rule's instructions and the event alone.
          </Text>
        )}
        <Text size="sm" fw={600}>
          Tools
        </Text>
        {tools.length > 0 ? (
          <Group gap="xs">
            {tools.map((tool) => (
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
  );
}
