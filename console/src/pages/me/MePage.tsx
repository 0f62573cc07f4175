import { Card, Group, Stack, Switch, Table, Text, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { meQuery } from '../../lib/queries';

const preferencesKey = ['me', 'tool-preferences'] as const;

/** The operator's account and tool preferences: "always deny" beats every rule for actions run as them. */
export function MePage() {
  const queryClient = useQueryClient();
  const me = useQuery(meQuery);
  const preferences = useQuery({ queryKey: preferencesKey, queryFn: () => unwrap(api.GET('/api/me/tool-preferences')) });
  const update = useMutation({
    mutationFn: ({ toolName, deny }: { toolName: string; deny: boolean }) =>
      unwrap(
        api.PUT('/api/me/tool-preferences/{toolName}', {
          params: { path: { toolName } },
          body: { preference: deny ? 'always_deny' : 'default' },
        }),
      ),
    onError: (error) => notifications.show({ color: 'red', title: 'Not saved', message: error.message }),
    onSettled: () => void queryClient.invalidateQueries({ queryKey: preferencesKey }),
  });
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
      <Title order={2} size="h4">
        Tool preferences
      </Title>
      <Text size="sm" c="dimmed">
        A tool you always deny is never run for actions that run as you, whatever the agent's rules say.
      </Text>
      {preferences.error && <QueryError error={preferences.error} />}
      <Table aria-label="Tool preferences">
        <Table.Tbody>
          {preferences.data?.preferences.map((preference) => (
            <Table.Tr key={preference.toolName}>
              <Table.Td ff="monospace">{preference.toolName}</Table.Td>
              <Table.Td>
                <Switch
                  label="Always deny"
                  checked={preference.preference === 'always_deny'}
                  onChange={(event) => update.mutate({ toolName: preference.toolName, deny: event.currentTarget.checked })}
                />
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
