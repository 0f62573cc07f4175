import { Button, Group, PasswordInput, Select, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { formatTime } from '../../lib/format';
import { keys } from '../../lib/queries';
import { PROVIDERS } from './AgentForm';
import { pageNotices } from '../../lib/notices';

type Provider = (typeof PROVIDERS)[number];

/** The org's own model provider keys: stored encrypted, shown only as a hint. */
export function ModelCredentials({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const queryKey = [...keys.org(org), 'model-credentials'];
  const credentials = useQuery({
    queryKey,
    queryFn: () => unwrap(api.GET('/orgs/{org}/model-credentials', { params: { path: { org } } })),
  });
  const [provider, setProvider] = useState<Provider>('openai');
  const [apiKey, setApiKey] = useState('');
  const refresh = () => void queryClient.invalidateQueries({ queryKey });
  const { failed, succeeded } = pageNotices('model-credentials');
  const save = useMutation({
    mutationFn: () =>
      unwrap(api.PUT('/orgs/{org}/model-credentials/{provider}', { params: { path: { org, provider } }, body: { apiKey } })),
    onSuccess: () => {
      setApiKey('');
      succeeded(`Key for ${provider} saved`);
    },
    onError: failed('Not saved'),
    onSettled: refresh,
  });
  const remove = useMutation({
    mutationFn: (name: Provider) =>
      unwrap(api.DELETE('/orgs/{org}/model-credentials/{provider}', { params: { path: { org, provider: name } } })),
    onSuccess: () => succeeded(),
    onError: failed('Not removed'),
    onSettled: refresh,
  });
  const rows = credentials.data?.credentials ?? [];
  return (
    <Stack>
      <Title order={2} size="h3">
        Model credentials
      </Title>
      <Text size="sm" c="dimmed">
        Agents of this organization use its own key for a provider when it has one, else the server's.
      </Text>
      <Table aria-label="Model credentials">
        <Table.Tbody>
          {rows.map((credential) => (
            <Table.Tr key={credential.provider}>
              <Table.Td>{credential.provider}</Table.Td>
              <Table.Td ff="monospace">{credential.apiKeyHint}</Table.Td>
              <Table.Td>{formatTime(credential.updatedAt)}</Table.Td>
              <Table.Td>
                <Button size="compact-xs" color="red" variant="subtle" onClick={() => remove.mutate(credential.provider)}>
                  Remove
                </Button>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <Group align="flex-end">
        <Select
          label="Provider"
          data={[...PROVIDERS]}
          value={provider}
          onChange={(value) => value && setProvider(value as Provider)}
          allowDeselect={false}
          w={200}
        />
        <PasswordInput
          label="API key"
          value={apiKey}
          onChange={(event) => setApiKey(event.currentTarget.value)}
          w={320}
          autoComplete="off"
        />
        <Button onClick={() => save.mutate()} disabled={apiKey.length < 8} loading={save.isPending}>
          Save key
        </Button>
      </Group>
    </Stack>
  );
}
