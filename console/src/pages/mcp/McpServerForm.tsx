import { zodResolver } from '@hookform/resolvers/zod';
import { ActionIcon, Alert, Button, Group, PasswordInput, Stack, Switch, Text, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useFieldArray, useForm } from 'react-hook-form';
import { z } from 'zod';
import { api, unwrap } from '../../api/client';
import { McpToolsTable } from './McpToolsTable';

const serverSchema = z
  .object({
    name: z.string().regex(/^[a-z0-9-]{1,32}$/, 'Lower-case letters, digits and -, 1 to 32 characters'),
    url: z.url({ protocol: /^https?$/, error: 'The server’s Streamable HTTP URL' }),
    headers: z.array(z.object({ name: z.string(), value: z.string() })).max(20),
    oauth: z.boolean(),
    clientId: z.string().max(500),
    clientSecret: z.string().max(2000),
    scope: z.string().max(1000),
    issuer: z.string().max(2000),
  })
  .refine((values) => !values.oauth || (values.clientId && values.clientSecret), {
    path: ['clientSecret'],
    message: 'The client id and secret',
  });
type ServerValues = z.infer<typeof serverSchema>;
const empty: ServerValues = {
  name: '',
  url: '',
  headers: [],
  oauth: false,
  clientId: '',
  clientSecret: '',
  scope: '',
  issuer: '',
};

const toBody = (values: ServerValues) => ({
  name: values.name,
  url: values.url,
  headers: Object.fromEntries(
    values.headers.filter((header) => header.name.trim()).map((header) => [header.name.trim(), header.value]),
  ),
  auth: values.oauth
    ? {
        type: 'client_credentials' as const,
        clientId: values.clientId,
        clientSecret: values.clientSecret,
        scope: values.scope.trim() || null,
        issuer: values.issuer.trim() || null,
      }
    : null,
});

/**
 * Connecting a server: the connection test lists its tools before anything is saved (as for the
 * email integration). Credentials go to the API once; afterwards only their hints are shown.
 */
export function McpServerForm({ org, onSaved }: { org: string; onSaved: () => void }) {
  const form = useForm<ServerValues>({ resolver: zodResolver(serverSchema), defaultValues: empty });
  const headers = useFieldArray({ control: form.control, name: 'headers' });
  const errors = form.formState.errors;
  const oauth = form.watch('oauth');
  const path = { org };
  const test = useMutation({
    mutationFn: (values: ServerValues) =>
      unwrap(api.POST('/orgs/{org}/mcp-servers/test', { params: { path }, body: toBody(values) })),
  });
  const save = useMutation({
    mutationFn: (values: ServerValues) => unwrap(api.POST('/orgs/{org}/mcp-servers', { params: { path }, body: toBody(values) })),
    onSuccess: onSaved,
  });
  // A change after a test needs a new test before saving.
  const resetTest = () => test.data && test.reset();
  return (
    <form onSubmit={form.handleSubmit((values) => test.mutate(values))} onChange={resetTest} noValidate>
      <Stack>
        <Group grow align="flex-start">
          <TextInput
            label="Name"
            description="The prefix of its tools: name__tool"
            placeholder="orders"
            {...form.register('name')}
            error={errors.name?.message}
          />
          <TextInput
            label="URL"
            placeholder="https://orders.example.com/mcp"
            {...form.register('url')}
            error={errors.url?.message}
          />
        </Group>
        <Stack gap={4}>
          <Text size="sm" fw={500}>
            Headers
          </Text>
          <Text size="xs" c="dimmed">
            Sent on every request (credentials, for instance Authorization: Bearer …); stored encrypted, never shown again.
          </Text>
          {headers.fields.map((field, index) => (
            <Group key={field.id} gap="xs" wrap="nowrap">
              <TextInput
                aria-label={`Header ${index + 1} name`}
                placeholder="Authorization"
                {...form.register(`headers.${index}.name`)}
                w={200}
              />
              <PasswordInput
                aria-label={`Header ${index + 1} value`}
                placeholder="Bearer …"
                autoComplete="off"
                {...form.register(`headers.${index}.value`)}
                style={{ flex: 1 }}
              />
              <ActionIcon
                variant="subtle"
                color="red"
                aria-label={`Remove header ${index + 1}`}
                onClick={() => headers.remove(index)}
              >
                ✕
              </ActionIcon>
            </Group>
          ))}
          <Group>
            <Button size="compact-sm" variant="light" onClick={() => headers.append({ name: '', value: '' })}>
              Add header
            </Button>
          </Group>
        </Stack>
        <Switch label="OAuth client credentials" {...form.register('oauth')} />
        {oauth && (
          <Stack gap="xs">
            <Group grow>
              <TextInput label="Client id" autoComplete="off" {...form.register('clientId')} />
              <PasswordInput
                label="Client secret"
                autoComplete="off"
                {...form.register('clientSecret')}
                error={errors.clientSecret?.message}
              />
            </Group>
            <Group grow>
              <TextInput label="Scope" placeholder="optional" {...form.register('scope')} />
              <TextInput
                label="Authorization server (issuer)"
                description="The secret is sent to it only"
                placeholder="https://login.example.com"
                {...form.register('issuer')}
              />
            </Group>
          </Stack>
        )}
        {test.error && (
          <Alert color="red" role="alert" title="Connection test failed">
            {test.error.message}
          </Alert>
        )}
        {save.error && (
          <Alert color="red" role="alert" title="Not saved">
            {save.error.message}
          </Alert>
        )}
        {test.data && (
          <Alert color="green" title={`Connected to ${test.data.serverInfo.name} ${test.data.serverInfo.version}`}>
            <McpToolsTable tools={test.data.tools} />
          </Alert>
        )}
        <Group justify="flex-end">
          <Button type="submit" variant="default" loading={test.isPending}>
            Test connection
          </Button>
          <Button disabled={!test.data} loading={save.isPending} onClick={form.handleSubmit((values) => save.mutate(values))}>
            Save
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
