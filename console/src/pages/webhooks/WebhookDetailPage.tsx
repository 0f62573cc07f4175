import { Button, Code, Group, Stack, Tabs, Text, Title } from '@mantine/core';
import { modals } from '@mantine/modals';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useParams } from '@tanstack/react-router';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { AnchorLink } from '../../components/links';
import { QueryError } from '../../components/RouteError';
import { type RevealedValue, SecretReveal } from '../../components/SecretReveal';
import { useOrgSlug } from '../../lib/org';
import { keys } from '../../lib/queries';
import { CallbackEndpoints } from './CallbackEndpoints';
import { SendTest } from './SendTest';
import { toWebhookBody, WebhookForm, type WebhookFormValues } from './WebhookForm';
import { clearRefusals, pageNotices } from '../../lib/notices';

export function WebhookDetailPage() {
  const org = useOrgSlug();
  const { id } = useParams({ from: '/signed-in/o/$org/admin/webhooks/$id' });
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [revealed, setRevealed] = useState<RevealedValue[] | null>(null);
  const queryKey = [...keys.org(org), 'webhook', id];
  const webhook = useQuery({
    queryKey,
    queryFn: () => unwrap(api.GET('/orgs/{org}/webhooks/{id}', { params: { path: { org, id } } })),
  });
  const refresh = () => void queryClient.invalidateQueries({ queryKey: keys.org(org) });
  const { failed, succeeded } = pageNotices('webhook');
  const save = useMutation({
    mutationFn: (values: WebhookFormValues) =>
      unwrap(api.PATCH('/orgs/{org}/webhooks/{id}', { params: { path: { org, id } }, body: toWebhookBody(values) })),
    onSuccess: () => succeeded('Webhook saved'),
    onError: failed('Not saved'),
    onSettled: refresh,
  });
  const rotate = useMutation({
    mutationFn: () => unwrap(api.POST('/orgs/{org}/webhooks/{id}/rotate-secret', { params: { path: { org, id } } })),
    onSuccess: (result) => {
      succeeded();
      setRevealed([{ label: 'Secret', value: result.secret }]);
    },
    onError: failed('Not rotated'),
  });
  const remove = useMutation({
    mutationFn: () => unwrap(api.DELETE('/orgs/{org}/webhooks/{id}', { params: { path: { org, id } } })),
    onSuccess: () => {
      succeeded();
      refresh();
      void navigate({ to: '/o/$org/webhooks', params: { org } });
    },
    onError: failed('Not deleted'),
  });

  if (webhook.error) return <QueryError error={webhook.error} />;
  if (!webhook.data) return <Text c="dimmed">Loading…</Text>;
  const current = webhook.data;
  const initial: WebhookFormValues = {
    ...current,
    schedule: current.schedule ? JSON.stringify(current.schedule, null, 2) : '',
  };
  const confirm = (title: string, body: string, label: string, action: () => void) =>
    modals.openConfirmModal({
      title,
      children: <Text size="sm">{body}</Text>,
      labels: { confirm: label, cancel: 'Cancel' },
      confirmProps: { color: 'red' },
      onConfirm: action,
    });

  return (
    <Stack>
      <AnchorLink to="/o/$org/webhooks" params={{ org }} size="sm">
        ← Webhooks
      </AnchorLink>
      <Group justify="space-between">
        <Stack gap={2}>
          <Title order={1} size="h2">
            {current.name}
          </Title>
          <Text size="sm" c="dimmed">
            Posts go to <Code>{current.url}</Code>
          </Text>
        </Stack>
        <Group>
          <Button
            variant="default"
            onClick={() =>
              confirm('Rotate the secret?', 'The old secret stops working at once: senders need the new one.', 'Rotate', () =>
                rotate.mutate(),
              )
            }
            loading={rotate.isPending}
          >
            Rotate secret
          </Button>
          <Button
            color="red"
            variant="light"
            onClick={() =>
              confirm('Delete this webhook?', 'Its URL stops accepting events. Its ledger rows stay.', 'Delete', () =>
                remove.mutate(),
              )
            }
            loading={remove.isPending}
          >
            Delete
          </Button>
        </Group>
      </Group>
      <Tabs defaultValue="settings" keepMounted={false} onChange={clearRefusals}>
        <Tabs.List>
          <Tabs.Tab value="settings">Settings</Tabs.Tab>
          <Tabs.Tab value="test">Send test</Tabs.Tab>
          <Tabs.Tab value="callbacks">Callbacks</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="settings" pt="md">
          <WebhookForm
            key={current.updatedAt}
            org={org}
            initial={initial}
            submitLabel="Save"
            busy={save.isPending}
            onSubmit={(values) => save.mutate(values)}
          />
        </Tabs.Panel>
        <Tabs.Panel value="test" pt="md">
          <SendTest org={org} webhookId={id} />
        </Tabs.Panel>
        <Tabs.Panel value="callbacks" pt="md">
          <CallbackEndpoints org={org} webhookId={id} />
        </Tabs.Panel>
      </Tabs>
      <SecretReveal title="New webhook secret" values={revealed} onClose={() => setRevealed(null)} />
    </Stack>
  );
}
