import { Badge, Button, Card, Group, Select, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { DecidedBy } from '../../components/Approvers';
import { ArgumentRuleList } from '../../components/ArgumentRules';
import { describeToolModes } from '../../components/CallRules';
import { QueryError } from '../../components/RouteError';
import { agentsQuery, keys } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';
import { AssignmentDialog, type EditedAssignment } from './AssignmentDialog';
import { type AssignmentRow, assignmentModes, assignmentValues, newAssignment } from './AssignmentForm';

/** Inboxes (addresses on the verified domain) and the agents that read and answer them. */
export function Inboxes({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const queryKey = [...keys.org(org), 'inboxes'];
  const inboxes = useQuery({
    queryKey,
    queryFn: () => unwrap(api.GET('/orgs/{org}/email/inboxes', { params: { path: { org } } })).then((body) => body.inboxes),
  });
  const { data: agents = [] } = useQuery(agentsQuery(org));
  const refresh = () => void queryClient.invalidateQueries({ queryKey });
  const { failed, succeeded } = pageNotices('inboxes');
  const [editing, setEditing] = useState<EditedAssignment | null>(null);
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
      <NewInbox org={org} onSettled={refresh} />
      {inboxes.error && <QueryError error={inboxes.error} />}
      {inboxes.isSuccess && inboxes.data.length === 0 && (
        <Text size="sm" c="dimmed">
          No inboxes: received email to an address without one is refused.
        </Text>
      )}
      {inboxes.data?.map((inbox) => (
        <InboxCard
          key={inbox.id}
          org={org}
          inbox={inbox}
          agentOptions={agents
            .filter((agent) => !inbox.agents.some((assigned) => assigned.agentId === agent.id))
            .map((agent) => ({ value: agent.id, label: agent.name }))}
          agentName={agentName}
          onEdit={setEditing}
          onUnassign={(agentId) => unassign.mutate({ inboxId: inbox.id, agentId })}
        />
      ))}
      <AssignmentDialog
        org={org}
        editing={editing}
        onClose={() => setEditing(null)}
        onSaved={() => succeeded('Assignment saved')}
        onSettled={refresh}
      />
    </Stack>
  );
}

/** Another inbox: its address and display name. */
function NewInbox({ org, onSettled }: { org: string; onSettled: () => void }) {
  const [address, setAddress] = useState('');
  const [displayName, setDisplayName] = useState('');
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
    onSettled,
  });
  return (
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
  );
}

interface InboxCardProps {
  org: string;
  inbox: { id: string; emailAddress: string; displayName: string; agents: AssignmentRow[] };
  agentOptions: { value: string; label: string }[];
  agentName: (id: string) => string;
  onEdit: (editing: EditedAssignment) => void;
  onUnassign: (agentId: string) => void;
}

function InboxCard({ org, inbox, agentOptions, agentName, onEdit, onUnassign }: InboxCardProps) {
  const [agentId, setAgentId] = useState<string | null>(null);
  return (
    <Card withBorder>
      <Stack gap="xs">
        <Text fw={600}>
          {inbox.displayName} &lt;{inbox.emailAddress}&gt;
        </Text>
        {inbox.agents.map((assigned) => (
          <AssignmentLine
            key={assigned.agentId}
            org={org}
            assigned={assigned}
            name={agentName(assigned.agentId)}
            onEdit={() =>
              onEdit({
                inboxId: inbox.id,
                title: `${agentName(assigned.agentId)} on ${inbox.displayName}`,
                agentId: assigned.agentId,
                assigned: true,
                initial: assignmentValues(assigned),
              })
            }
            onUnassign={() => onUnassign(assigned.agentId)}
          />
        ))}
        <Group align="flex-end" gap="xs">
          <Select label="Assign an agent" size="xs" data={agentOptions} value={agentId} onChange={setAgentId} w={220} />
          <Button
            size="xs"
            variant="default"
            disabled={!agentId}
            onClick={() => {
              if (!agentId) return;
              onEdit({
                inboxId: inbox.id,
                title: `Assign ${agentName(agentId)} to ${inbox.displayName}`,
                agentId,
                assigned: false,
                initial: newAssignment(inbox.agents.length === 0),
              });
              setAgentId(null);
            }}
          >
            Assign
          </Button>
        </Group>
      </Stack>
    </Card>
  );
}

/** How an agent's approvers are told that one of its actions on the inbox waits. */
const NOTIFY_BADGES: Record<AssignmentRow['notify'][number], string> = {
  email: 'emails the approvers',
  slack: 'posts in Slack',
};

/** An agent on the inbox: what it does there, who decides its calls, its buttons, then its modes and argument rules. */
function AssignmentLine(props: {
  org: string;
  assigned: AssignmentRow;
  name: string;
  onEdit: () => void;
  onUnassign: () => void;
}) {
  const { assigned } = props;
  return (
    <Stack gap={2} data-assignment={props.name}>
      <Group gap="xs">
        <Text size="sm">{props.name}</Text>
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
            {NOTIFY_BADGES[channel]}
          </Badge>
        ))}
        <DecidedBy org={props.org} approvers={assigned.approvers} minApprovals={assigned.minApprovals} />
        <Button size="compact-xs" variant="subtle" onClick={props.onEdit}>
          Edit
        </Button>
        <Button size="compact-xs" variant="subtle" color="red" onClick={props.onUnassign}>
          Remove
        </Button>
      </Group>
      <Text size="xs" ff="monospace">
        {describeToolModes(assignmentModes(assigned))}
      </Text>
      <ArgumentRuleList rules={assigned.argumentRules} />
    </Stack>
  );
}
