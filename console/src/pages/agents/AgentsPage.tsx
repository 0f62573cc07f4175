import { Badge, Button, Group, Stack, Table, Text, Title } from '@mantine/core';
import { modals } from '@mantine/modals';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { useOrgSlug } from '../../lib/org';
import { agentsQuery, keys, rulesQuery } from '../../lib/queries';
import { AnchorLink } from '../../components/links';
import { agentModel } from '../../lib/format';
import { pageNotices } from '../../lib/notices';
import { AgentDialog, type EditedAgent } from './AgentDialog';
import { agentValues } from './AgentForm';
import { ModelCredentials } from './ModelCredentials';
import { type EditedRule, RuleDialog } from './RuleDialog';
import { ruleValues } from './RuleForm';
import { RuleSummary } from './RuleSummary';

/** The dialog open on the page: an agent's or a rule's, new (none named) or one being changed. */
type Editing = { kind: 'agent'; agent?: EditedAgent } | { kind: 'rule'; rule?: EditedRule } | null;
type Deletes = (kind: 'agent' | 'rule', id: string, name: string) => void;

/** Agents, the action rules that route events to them with approval modes per tool, and model keys. */
export function AgentsPage() {
  const org = useOrgSlug();
  const queryClient = useQueryClient();
  const [editing, setEditing] = useState<Editing>(null);
  const { failed, succeeded } = pageNotices('agents');
  const changed = (message: string) => {
    succeeded(message);
    void queryClient.invalidateQueries({ queryKey: keys.org(org) });
  };
  const confirmDelete = useConfirmedDelete(org, () => changed('Deleted'), failed('Not deleted'));
  const close = () => setEditing(null);
  return (
    <Stack gap="xl">
      <AgentsTable
        org={org}
        onNew={() => setEditing({ kind: 'agent' })}
        onEdit={(agent) => setEditing({ kind: 'agent', agent })}
        onDelete={confirmDelete}
      />
      <RulesTable
        org={org}
        onNew={() => setEditing({ kind: 'rule' })}
        onEdit={(rule) => setEditing({ kind: 'rule', rule })}
        onDelete={confirmDelete}
      />
      <ModelCredentials org={org} />
      <AgentDialog org={org} editing={editing?.kind === 'agent' ? editing : null} onClose={close} onSaved={changed} />
      <RuleDialog org={org} editing={editing?.kind === 'rule' ? editing : null} onClose={close} onSaved={changed} />
    </Stack>
  );
}

/** Deletes an agent or a rule once the operator confirms what that does to what names it. */
function useConfirmedDelete(org: string, onDeleted: () => void, onFailed: (error: Error) => void): Deletes {
  const remove = useMutation({
    mutationFn: ({ kind, id }: { kind: 'agent' | 'rule'; id: string }) =>
      kind === 'agent'
        ? unwrap(api.DELETE('/orgs/{org}/agents/{agentId}', { params: { path: { org, agentId: id } } }))
        : unwrap(api.DELETE('/orgs/{org}/action-rules/{ruleId}', { params: { path: { org, ruleId: id } } })),
    onSuccess: onDeleted,
    onError: onFailed,
  });
  return (kind, id, name) =>
    modals.openConfirmModal({
      title: `Delete ${name}?`,
      children: (
        <Text size="sm">
          {kind === 'agent'
            ? 'Rules and webhooks that name it lose their agent, and its actions not finished yet ' +
              '(queued, or waiting for approval) fail when they next run.'
            : 'Webhooks that use it buffer their events until they get another rule.'}
        </Text>
      ),
      labels: { confirm: 'Delete', cancel: 'Cancel' },
      confirmProps: { color: 'red' },
      onConfirm: () => remove.mutate({ kind, id }),
    });
}

function AgentsTable(props: { org: string; onNew: () => void; onEdit: (agent: EditedAgent) => void; onDelete: Deletes }) {
  const { org } = props;
  const agents = useQuery(agentsQuery(org));
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Agents
        </Title>
        <Button onClick={props.onNew}>New agent</Button>
      </Group>
      {agents.error && <QueryError error={agents.error} />}
      <Table aria-label="Agents">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Live version</Table.Th>
            <Table.Th>Model</Table.Th>
            <Table.Th>Tools</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {agents.data?.map((agent) => (
            <Table.Tr key={agent.id}>
              <Table.Td>
                <AnchorLink to="/o/$org/agents/$id" params={{ org, id: agent.id }}>
                  {agent.name}
                </AnchorLink>
              </Table.Td>
              <Table.Td>v{agent.liveVersion}</Table.Td>
              <Table.Td>{agentModel(agent)}</Table.Td>
              <Table.Td>
                <Group gap={4}>
                  {agent.tools.map((tool) => (
                    <Badge key={tool} variant="outline" tt="none" size="sm">
                      {tool}
                    </Badge>
                  ))}
                </Group>
              </Table.Td>
              <Table.Td>
                <RowButtons
                  onEdit={() => props.onEdit({ id: agent.id, name: agent.name, initial: agentValues(agent) })}
                  onDelete={() => props.onDelete('agent', agent.id, agent.name)}
                />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}

function RulesTable(props: { org: string; onNew: () => void; onEdit: (rule: EditedRule) => void; onDelete: Deletes }) {
  const { org } = props;
  const rules = useQuery(rulesQuery(org));
  const { data: agents } = useQuery(agentsQuery(org));
  const agentName = (id: string | null) => agents?.find((agent) => agent.id === id)?.name ?? '—';
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2} size="h3">
          Action rules
        </Title>
        <Button variant="light" onClick={props.onNew}>
          New rule
        </Button>
      </Group>
      {rules.error && <QueryError error={rules.error} />}
      <Table aria-label="Action rules">
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Agent</Table.Th>
            <Table.Th>What waits, and who decides</Table.Th>
            <Table.Th>State</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rules.data?.map((rule) => (
            <Table.Tr key={rule.id}>
              <Table.Td>{rule.name}</Table.Td>
              <Table.Td>{agentName(rule.agentId)}</Table.Td>
              <Table.Td>
                <RuleSummary org={org} rule={rule} />
              </Table.Td>
              <Table.Td>{rule.enabled ? 'enabled' : 'disabled'}</Table.Td>
              <Table.Td>
                <RowButtons
                  onEdit={() => props.onEdit({ id: rule.id, initial: ruleValues(rule) })}
                  onDelete={() => props.onDelete('rule', rule.id, rule.name)}
                />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}

function RowButtons({ onEdit, onDelete }: { onEdit: () => void; onDelete: () => void }) {
  return (
    <Group gap="xs" justify="flex-end">
      <Button size="compact-sm" variant="default" onClick={onEdit}>
        Edit
      </Button>
      <Button size="compact-sm" color="red" variant="subtle" onClick={onDelete}>
        Delete
      </Button>
    </Group>
  );
}
