import { zodResolver } from '@hookform/resolvers/zod';
import { Alert, Badge, Button, Card, Group, List, PasswordInput, SimpleGrid, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import { api, unwrap } from '../../api/client';
import { formatTime, keepSavedHint } from '../../lib/format';
import { keys } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';

/** With an integration saved, an empty key or secret keeps the saved one (the provider shows a key once). */
const integrationSchema = (saved: boolean) =>
  z.object({
    apiKey: saved ? z.string().max(500) : z.string().min(8, 'The provider API key').max(500),
    fromEmail: z.email('An address on a verified domain').max(320),
    fromName: z.string().max(200),
    webhookSecret: saved ? z.string() : z.string().min(1, "The signing secret of the provider's webhook"),
  });
type IntegrationValues = z.infer<ReturnType<typeof integrationSchema>>;
const toBody = ({ apiKey, webhookSecret, fromEmail, fromName }: IntegrationValues) => ({
  fromEmail,
  fromName: fromName.trim() || null,
  ...(apiKey.trim() && { apiKey }),
  ...(webhookSecret.trim() && { webhookSecret }),
});

/**
 * Spec 4.3.3: the org's email provider. The connection test checks the key, the sender's domain and
 * its receiving before anything is saved; keys are stored encrypted and shown as hints.
 */
export function EmailIntegration({ org }: { org: string }) {
  const queryClient = useQueryClient();
  const queryKey = [...keys.org(org), 'email-integration'];
  const current = useQuery({
    queryKey,
    queryFn: () => unwrap(api.GET('/orgs/{org}/email/integration', { params: { path: { org } } })),
  });
  const saved = current.data;
  const configured = saved?.configured ?? false;
  // The sender as saved, to change in place; the key and the secret are never shown again.
  const savedValues = { apiKey: '', fromEmail: saved?.fromEmail ?? '', fromName: saved?.fromName ?? '', webhookSecret: '' };
  const form = useForm<IntegrationValues>({
    resolver: zodResolver(integrationSchema(configured)),
    // The form's defaults too (react-hook-form starts from `values` where no defaultValues are given).
    values: savedValues,
    resetOptions: { keepDirtyValues: true },
  });
  const test = useMutation({
    mutationFn: (values: IntegrationValues) =>
      unwrap(api.POST('/orgs/{org}/email/integration/test', { params: { path: { org } }, body: toBody(values) })),
  });
  const { failed, succeeded } = pageNotices('email-integration');
  const save = useMutation({
    mutationFn: (values: IntegrationValues) =>
      unwrap(api.PUT('/orgs/{org}/email/integration', { params: { path: { org } }, body: toBody(values) })),
    onSuccess: (integration) => {
      queryClient.setQueryData(queryKey, integration);
      // Back to the sender as saved (the form's values), the key and secret fields emptied: what was typed
      // is not kept here, as it is when the saved integration arrives (resetOptions).
      form.reset(undefined, { keepDirtyValues: false });
      test.reset();
      succeeded('Email integration saved');
    },
    onError: failed('Not saved'),
    onSettled: () => void queryClient.invalidateQueries({ queryKey }),
  });
  const errors = form.formState.errors;
  return (
    <SimpleGrid cols={{ base: 1, lg: 2 }}>
      <form onSubmit={form.handleSubmit((values) => test.mutate(values))} noValidate>
        <Stack>
          <PasswordInput
            label="API key"
            placeholder={keepSavedHint(configured ? saved?.apiKeyHint : null)}
            autoComplete="off"
            {...form.register('apiKey')}
            error={errors.apiKey?.message}
          />
          <Group grow>
            <TextInput label="From email" {...form.register('fromEmail')} error={errors.fromEmail?.message} />
            <TextInput label="From name" {...form.register('fromName')} />
          </Group>
          <PasswordInput
            label="Webhook secret"
            description="The signing secret of the provider's webhook to /webhooks/mail"
            placeholder={keepSavedHint(configured ? saved?.webhookSecretHint : null)}
            autoComplete="off"
            {...form.register('webhookSecret')}
            error={errors.webhookSecret?.message}
          />
          {test.error && <Alert color="red">{test.error.message}</Alert>}
          {test.data && (
            <Alert color={test.data.ok ? 'green' : 'red'} title={test.data.ok ? 'Connection works' : 'Connection test failed'}>
              <List size="sm">
                {test.data.checks.map((check) => (
                  <List.Item key={check.name}>
                    {check.ok ? '✓' : '✗'} {check.message}
                  </List.Item>
                ))}
              </List>
            </Alert>
          )}
          <Group justify="flex-end">
            <Button type="submit" variant="default" loading={test.isPending}>
              Test connection
            </Button>
            <Button
              disabled={!test.data?.ok}
              loading={save.isPending}
              onClick={form.handleSubmit((values) => save.mutate(values))}
            >
              Save
            </Button>
          </Group>
        </Stack>
      </form>
      <Card withBorder>
        <Stack gap="xs">
          <Text fw={600}>Saved integration</Text>
          {saved?.configured ? (
            <>
              <Text size="sm">From: {saved.fromName ? `${saved.fromName} <${saved.fromEmail}>` : saved.fromEmail}</Text>
              <Text size="sm" ff="monospace">
                API key {saved.apiKeyHint} · webhook secret {saved.webhookSecretHint}
              </Text>
              {saved.domain && (
                <Group gap="xs">
                  <Badge variant="dot" color={saved.domain.status === 'verified' ? 'green' : 'orange'} tt="none">
                    {saved.domain.name}: {saved.domain.status ?? 'not checked'}
                  </Badge>
                  <Badge variant="dot" color={saved.domain.receiving ? 'green' : 'gray'} tt="none">
                    receiving {saved.domain.receiving ? 'on' : 'off'}
                  </Badge>
                </Group>
              )}
              <Text size="xs" c="dimmed">
                Updated {formatTime(saved.updatedAt)}
              </Text>
            </>
          ) : (
            <Text size="sm" c="dimmed">
              Not configured: agents cannot send email, and received email is not accepted.
            </Text>
          )}
        </Stack>
      </Card>
    </SimpleGrid>
  );
}
