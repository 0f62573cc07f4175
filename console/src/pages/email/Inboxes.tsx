import { Badge, Button, Card, Checkbox, Group, Select, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { components } from '../../api/schema';
import { QueryError } from '../../components/RouteError';
import { agentsQuery, keys } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';

/** Inboxes (addresses on the verified domain) and the agents that read and answer them. */
export function Inboxes({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const queryKey = [...keys.org(org), 'inboxes'];
  const inboxes = useQuery({
    queryKey,
    queryFn: () => unwrap(api.GET('/orgs/{org}/email/inboxes', { params: { path: { org } } })).then((body) => body.inboxes),
  });
  const { data: agents = [] } = useQuery(agentsQuery(org));
  const [address, setAddress] = useState('');
  const [displayName, setDisplayName] = useState('');
  const refresh = () => void queryClient.invalidateQueries({ queryKey });
  const { failed, succeeded } = pageNotices('inboxes');
  const create = useMutation({
    mutationFn: () =>
      unwrap(api.POST('/orgs/{org}/email/inboxes', { params: { path: { org } }, body: { emailAddress: address, displayName } })),
    onSuccess: () => {
      setAddress('');
      setDisplayName('');
      succeeded();
    },
    onError: failed('Inbox not created'),
    onSettled: refresh,
  });
  const assign = useMutation({
    mutationFn: (input: { inboxId: string } & Assignment) =>
      unwrap(
        api.POST('/orgs/{org}/email/inboxes/{inboxId}/agents', {
          params: { path: { org, inboxId: input.inboxId } },
          body: input,
        }),
      ),
    onSuccess: () => succeeded(),
    onError: failed('Not assigned'),
    onSettled: refresh,
  });
  const unassign = useMutation({
    mutationFn: (input: { inboxId: string; agentId: string }) =>
      unwrap(api.DELETE('/orgs/{org}/email/inboxes/{inboxId}/agents/{agentId}', { params: { path: { org, ...input } } })),
    onSuccess: () => succeeded(),
    onError: failed('Not removed'),
    onSettled: refresh,
  });
  const agentName = (id: string) => agents.find((agent) => agent.id === id)?.name ?? id;
  return (
    <Stack>
      <Group align="flex-end">
        <TextInput
          label="Address"
          placeholder="help@mail.example.com"
          value={address}
          onChange={(event) => setAddress(event.currentTarget.value)}
          w={280}
        />
        <TextInput
          label="Display name"
          placeholder="Help desk"
          value={displayName}
          onChange={(event) => setDisplayName(event.currentTarget.value)}
          w={220}
        />
        <Button onClick={() => create.mutate()} disabled={!address || !displayName} loading={create.isPending}>
          Add inbox
        </Button>
      </Group>
      {inboxes.error && <QueryError error={inboxes.error} />}
      {inboxes.isSuccess && inboxes.data.length === 0 && (
        <Text size="sm" c="dimmed">
          No inboxes: received email to an address without one is refused.
        </Text>
      )}
      {inboxes.data?.map((inbox) => (
        <InboxCard
          key={inbox.id}
          inbox={inbox}
          agentOptions={agents
            .filter((agent) => !inbox.agents.some((assigned) => assigned.agentId === agent.id))
            .map((agent) => ({ value: agent.id, label: agent.name }))}
          agentName={agentName}
          onAssign={(assignment) => assign.mutate({ inboxId: inbox.id, ...assignment })}
          onUnassign={(agentId) => unassign.mutate({ inboxId: inbox.id, agentId })}
        />
      ))}
    </Stack>
  );
}

type AssignmentRow = components['schemas']['InboxAgentAssignment'];
type Channel = AssignmentRow['notify'][number];
/** An agent assigned to an inbox, as the form sends it. */
type Assignment = Pick<AssignmentRow, 'agentId' | 'isPrimary' | 'autoRespond' | 'notify'>;

interface InboxCardProps {
  inbox: {
    id: string;
    emailAddress: string;
    displayName: string;
    agents: Assignment[];
  };
  agentOptions: { value: string; label: string }[];
  agentName: (id: string) => string;
  onAssign: (assignment: Assignment) => void;
  onUnassign: (agentId: string) => void;
}

/** How the admins are told that an action of the inbox waits (they decide an inbox's calls). */
const NOTIFY_LABELS: Record<Channel, { option: string; badge: string }> = {
  email: { option: 'Email the admins when a call waits', badge: 'emails the admins' },
  slack: { option: 'Post in Slack when a call waits', badge: 'posts in Slack' },
};

function InboxCard({ inbox, agentOptions, agentName, onAssign, onUnassign }: InboxCardProps) {
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Text fw={600}>
          {inbox.displayName} &lt;{inbox.emailAddress}&gt;
        </Text>
        {inbox.agents.map((assigned) => (
          <Group key={assigned.agentId} gap="xs">
            <Text size="sm">{agentName(assigned.agentId)}</Text>
            {assigned.isPrimary && (
              <Badge tt="none" variant="outline">
                primary
              </Badge>
            )}
            {assigned.autoRespond && (
              <Badge tt="none" variant="outline">
                answers every email
              </Badge>
            )}
            {assigned.notify.map((channel) => (
              <Badge key={channel} tt="none" variant="outline">
                {NOTIFY_LABELS[channel].badge}
              </Badge>
            ))}
            <Button size="compact-xs" variant="subtle" color="red" onClick={() => onUnassign(assigned.agentId)}>
              Remove
            </Button>
          </Group>
        ))}
        <AssignForm agentOptions={agentOptions} firstAgent={inbox.agents.length === 0} onAssign={onAssign} />
      </Stack>
    </Card>
  );
}

/** Another agent for the inbox: whether it answers every email, and how the admins are told that its calls wait. */
function AssignForm(props: Pick<InboxCardProps, 'agentOptions' | 'onAssign'> & { firstAgent: boolean }) {
  const [agentId, setAgentId] = useState<string | null>(null);
  const [autoRespond, setAutoRespond] = useState(true);
  const [notify, setNotify] = useState<Channel[]>([]);
  const toggle = (channel: Channel, on: boolean) =>
    setNotify((current) => (on ? [...current, channel] : current.filter((other) => other !== channel)));
  return (
    <Group align="flex-end" gap="xs">
      <Select label="Assign an agent" size="xs" data={props.agentOptions} value={agentId} onChange={setAgentId} w={220} />
      <Checkbox
        label="Answers every email"
        size="xs"
        checked={autoRespond}
        onChange={(event) => setAutoRespond(event.currentTarget.checked)}
      />
      {(['email', 'slack'] as const).map((channel) => (
        <Checkbox
          key={channel}
          label={NOTIFY_LABELS[channel].option}
          size="xs"
          checked={notify.includes(channel)}
          onChange={(event) => toggle(channel, event.currentTarget.checked)}
        />
      ))}
      <Button
        size="xs"
        variant="default"
        disabled={!agentId}
        onClick={() => {
          if (!agentId) return;
          props.onAssign({ agentId, isPrimary: props.firstAgent, autoRespond, notify });
          setAgentId(null);
          setNotify([]);
        }}
      >
        Assign
      </Button>
    </Group>
  );
}
