import { Card, Group, Stack, Switch, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { meQuery, orgsQuery, toolsQuery } from '../../lib/queries';
import { ApprovalEmailsSwitch } from './ApprovalEmailsSwitch';
import { pageNotices } from '../../lib/notices';

const preferencesKey = ['me', 'tool-preferences'] as const;

/** The operator's account and tool preferences: "always deny" beats every rule for actions run as them. */
export function MePage() {
  const queryClient = useQueryClient();
  const me = useQuery(meQuery);
  const preferences = useQuery({ queryKey: preferencesKey, queryFn: () => unwrap(api.GET('/api/me/tool-preferences')) });
  // Every tool of the server (any org of the operator lists them), with the preference set for it, if any.
  const { data: orgs = [] } = useQuery(orgsQuery);
  const { data: tools = [] } = useQuery({ ...toolsQuery(orgs[0]?.slug ?? ''), enabled: orgs.length > 0 });
  const denied = new Set(
    preferences.data?.preferences
      .filter((preference) => preference.preference === 'always_deny')
      .map((preference) => preference.toolName),
  );
  const toolNames = [
    ...new Set([
      ...tools.map((tool) => tool.name),
      ...(preferences.data?.preferences.map((preference) => preference.toolName) ?? []),
    ]),
  ];
  // Optimistic: a switch moves at once (set in the click's own render), and back if saving fails.
  const [moving, setMoving] = useState<Record<string, boolean>>({});
  const settle = (toolName: string) => setMoving(({ [toolName]: _settled, ...rest }) => rest);
  const { failed, succeeded } = pageNotices('tool-preferences');
  const update = useMutation({
    mutationFn: ({ toolName, deny }: { toolName: string; deny: boolean }) =>
      unwrap(
        api.PUT('/api/me/tool-preferences/{toolName}', {
          params: { path: { toolName } },
          body: { preference: deny ? 'always_deny' : 'default' },
        }),
      ),
    onSuccess: () => succeeded(),
    onError: failed('Not saved'),
    onSettled: async (_data, _error, variables) => {
      await queryClient.invalidateQueries({ queryKey: preferencesKey });
      settle(variables.toolName);
    },
  });
  const toggle = (toolName: string, deny: boolean) => {
    setMoving((current) => ({ ...current, [toolName]: deny }));
    update.mutate({ toolName, deny });
  };
  return (
    <Stack maw={720}>
      <Title order={1} size="h2">
        Me
      </Title>
      {me.data && (
        <Card withBorder>
          <Group gap="xl">
            <Text size="sm">{me.data.email}</Text>
            <Text size="sm" c="dimmed">
              {me.data.role} · signed in with {me.data.provider}
            </Text>
          </Group>
        </Card>
      )}
      {me.data && <ApprovalEmailsSwitch enabled={me.data.preferences.approvalEmails} />}
      <Title order={2} size="h4">
        Tool preferences
      </Title>
      <Text size="sm" c="dimmed">
        A tool you always deny is never run for actions that run as you, whatever the agent's rules say.
      </Text>
      {preferences.error && <QueryError error={preferences.error} />}
      <Table aria-label="Tool preferences">
        <Table.Tbody>
          {toolNames.map((toolName) => (
            <Table.Tr key={toolName}>
              <Table.Td ff="monospace">{toolName}</Table.Td>
              <Table.Td>
                <Switch
                  label="Always deny"
                  aria-label={`Always deny ${toolName}`}
                  checked={toolName in moving ? moving[toolName] : denied.has(toolName)}
                  onChange={(event) => toggle(toolName, event.currentTarget.checked)}
                />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
