import { Badge, Button, Group, Modal, Stack, Table, Text, Title } from '@mantine/core';
import { modals } from '@mantine/modals';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { useOrgSlug } from '../../lib/org';
import { agentsQuery, keys, rulesQuery } from '../../lib/queries';
import { AnchorLink } from '../../components/links';
import { FormError } from '../../components/FormParts';
import { agentModel } from '../../lib/format';
import { pageNotices } from '../../lib/notices';
import { AgentForm, type AgentValues, agentValues, emptyAgent, toAgentBody } from './AgentForm';
import { ModelCredentials } from './ModelCredentials';
import { emptyRule, RuleForm, type RuleValues, ruleValues, toRuleBody } from './RuleForm';
import { RuleSummary } from './RuleSummary';

type Editing = { kind: 'agent'; id?: string; initial: AgentValues } | { kind: 'rule'; id?: string; initial: RuleValues } | null;

/** Agents, the action rules that route events to them with approval modes per tool, and model keys. */
export function AgentsPage() {
  const org = useOrgSlug();
  const queryClient = useQueryClient();
  const agents = useQuery(agentsQuery(org));
  const rules = useQuery(rulesQuery(org));
  const [editing, setEditing] = useState<Editing>(null);
  const path = { org };
  const { failed, succeeded } = pageNotices('agents');
  const done = (message: string) => {
    setEditing(null);
    succeeded(message);
    void queryClient.invalidateQueries({ queryKey: keys.org(org) });
  };
  const saveAgent = useMutation({
    mutationFn: ({ id, values }: { id?: string; values: AgentValues }) =>
      id
        ? unwrap(api.PATCH('/orgs/{org}/agents/{agentId}', { params: { path: { org, agentId: id } }, body: toAgentBody(values) }))
        : unwrap(api.POST('/orgs/{org}/agents', { params: { path }, body: toAgentBody(values) })),
    onSuccess: () => done('Agent saved'),
  });
  const saveRule = useMutation({
    mutationFn: ({ id, values }: { id?: string; values: RuleValues }) =>
      id
        ? unwrap(
            api.PATCH('/orgs/{org}/action-rules/{ruleId}', { params: { path: { org, ruleId: id } }, body: toRuleBody(values) }),
          )
        : unwrap(api.POST('/orgs/{org}/action-rules', { params: { path }, body: toRuleBody(values) })),
    onSuccess: () => done('Rule saved'),
  });
  const remove = useMutation({
    mutationFn: ({ kind, id }: { kind: 'agent' | 'rule'; id: string }) =>
      kind === 'agent'
        ? unwrap(api.DELETE('/orgs/{org}/agents/{agentId}', { params: { path: { org, agentId: id } } }))
        : unwrap(api.DELETE('/orgs/{org}/action-rules/{ruleId}', { params: { path: { org, ruleId: id } } })),
    onSuccess: () => done('Deleted'),
    onError: failed('Not deleted'),
  });
  const confirmDelete = (kind: 'agent' | 'rule', id: string, name: string) =>
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
  const agentName = (id: string | null) => agents.data?.find((agent) => agent.id === id)?.name ?? '—';

  return (
    <Stack gap="xl">
      <Stack>
        <Group justify="space-between">
          <Title order={1} size="h2">
            Agents
          </Title>
          <Button onClick={() => setEditing({ kind: 'agent', initial: emptyAgent })}>New agent</Button>
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
                    onEdit={() => setEditing({ kind: 'agent', id: agent.id, initial: agentValues(agent) })}
                    onDelete={() => confirmDelete('agent', agent.id, agent.name)}
                  />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Stack>
      <Stack>
        <Group justify="space-between">
          <Title order={2} size="h3">
            Action rules
          </Title>
          <Button variant="light" onClick={() => setEditing({ kind: 'rule', initial: emptyRule })}>
            New rule
          </Button>
        </Group>
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
                    onEdit={() => setEditing({ kind: 'rule', id: rule.id, initial: ruleValues(rule) })}
                    onDelete={() => confirmDelete('rule', rule.id, rule.name)}
                  />
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </Stack>
      <ModelCredentials org={org} />
      <Modal
        opened={editing !== null}
        onClose={() => {
          setEditing(null);
          saveAgent.reset(); // its refusal was of what this dialog held
          saveRule.reset();
        }}
        title={editing ? `${editing.id ? 'Edit' : 'New'} ${editing.kind === 'agent' ? 'agent' : 'action rule'}` : ''}
        size={editing?.kind === 'rule' ? 'xl' : 'lg'}
      >
        {editing?.kind === 'agent' && (
          <AgentForm
            org={org}
            initial={editing.initial}
            submitLabel="Save agent"
            busy={saveAgent.isPending}
            onSubmit={(values) => saveAgent.mutate({ id: editing.id, values })}
            refusal={<FormError title="Agent not saved" error={saveAgent.error} />}
          />
        )}
        {editing?.kind === 'rule' && (
          <RuleForm
            org={org}
            initial={editing.initial}
            submitLabel="Save rule"
            busy={saveRule.isPending}
            onSubmit={(values) => saveRule.mutate({ id: editing.id, values })}
            refusal={<FormError title="Rule not saved" error={saveRule.error} />}
          />
        )}
      </Modal>
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
