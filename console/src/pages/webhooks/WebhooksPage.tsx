import { Dialog } from '../../components/Dialog';
import { EmptyState, FormError } from '../../components/FormParts';
import { Badge, Button, Code, Group, Stack, Table, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import type { paths } from '../../api/schema';
import { AnchorLink } from '../../components/links';
import { QueryError } from '../../components/RouteError';
import { type RevealedValue, SecretReveal } from '../../components/SecretReveal';
import { useOrgSlug } from '../../lib/org';
import { keys, rulesQuery, webhooksQuery } from '../../lib/queries';
import { emptyWebhook, toWebhookBody, WebhookForm, type WebhookFormValues } from './WebhookForm';

type Webhook = paths['/orgs/{org}/webhooks']['get']['responses'][200]['content']['application/json']['webhooks'][number];

/** Spec 2.6: the org's action webhooks; a new one shows its URL and secret once. */
export function WebhooksPage() {
  const org = useOrgSlug();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const webhooks = useQuery(webhooksQuery(org));
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<{ id: string; values: RevealedValue[] } | null>(null);
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Webhooks
        </Title>
        <Button onClick={() => setCreating(true)}>New webhook</Button>
      </Group>
      {webhooks.error && <QueryError error={webhooks.error} />}
      {webhooks.isSuccess && webhooks.data.length === 0 && (
        <EmptyState>
          No webhooks yet. A webhook is the URL an outside system posts its events to; each accepted event becomes an action.
        </EmptyState>
      )}
      {(webhooks.data?.length ?? 0) > 0 && <WebhooksTable org={org} webhooks={webhooks.data ?? []} />}
      <Dialog value={creating || null} onClose={() => setCreating(false)} title={() => 'New webhook'} size="xl">
        {(_, close) => (
          <NewWebhookForm
            org={org}
            onClose={close}
            onCreated={(result) => {
              void queryClient.invalidateQueries({ queryKey: keys.org(org) });
              setCreated({
                id: result.webhook.id,
                values: [
                  { label: 'URL', value: result.url },
                  { label: 'Secret', value: result.secret },
                ],
              });
            }}
          />
        )}
      </Dialog>
      <SecretReveal
        title="Webhook created"
        values={created?.values ?? null}
        onClose={() => {
          const id = created?.id;
          setCreated(null);
          if (id) void navigate({ to: '/o/$org/webhooks/$id', params: { org, id } });
        }}
      />
    </Stack>
  );
}

/**
 * The form of the dialog that creates a webhook, mounted for each opening, so a refusal it shows is of
 * what it holds and closes with it; `onCreated` gets the URL and the secret, shown once.
 */
function NewWebhookForm(props: {
  org: string;
  onClose: () => void;
  onCreated: (result: { webhook: { id: string }; url: string; secret: string }) => void;
}) {
  const create = useMutation({
    mutationFn: (values: WebhookFormValues) =>
      unwrap(api.POST('/orgs/{org}/webhooks', { params: { path: { org: props.org } }, body: toWebhookBody(values) })),
    // The secret is shown even when the dialog was closed before the webhook was made (it is shown
    // once); the dialog is closed by it only while open (below), not another opened since.
    onSuccess: props.onCreated,
  });
  return (
    <WebhookForm
      org={props.org}
      initial={emptyWebhook}
      submitLabel="Create webhook"
      busy={create.isPending}
      onSubmit={(values) => create.mutate(values, { onSuccess: props.onClose })}
      refusal={<FormError title="Not created" error={create.error} />}
    />
  );
}

/** The org's webhooks: each with its identifier, its rule, how its posts are verified, and whether it takes them. */
function WebhooksTable({ org, webhooks }: { org: string; webhooks: Webhook[] }) {
  const { data: rules = [] } = useQuery(rulesQuery(org));
  const ruleName = (id: string | null) => rules.find((rule) => rule.id === id)?.name ?? '—';
  return (
    <Table highlightOnHover aria-label="Webhooks">
      <Table.Thead>
        <Table.Tr>
          <Table.Th>Name</Table.Th>
          <Table.Th>Identifier</Table.Th>
          <Table.Th>Action rule</Table.Th>
          <Table.Th>Verification</Table.Th>
          <Table.Th>State</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {webhooks.map((webhook) => (
          <Table.Tr key={webhook.id}>
            <Table.Td>
              <AnchorLink to="/o/$org/webhooks/$id" params={{ org, id: webhook.id }}>
                {webhook.name}
              </AnchorLink>
            </Table.Td>
            <Table.Td>
              <Code>{webhook.webhookIdentifier}</Code>
            </Table.Td>
            <Table.Td>{ruleName(webhook.actionRuleId)}</Table.Td>
            <Table.Td>{webhook.verificationScheme}</Table.Td>
            <Table.Td>
              <Badge variant="dot" color={webhook.enabled ? 'green' : 'gray'} tt="none">
                {webhook.enabled ? 'enabled' : 'disabled'}
              </Badge>
            </Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
