import { EmptyState, FormError } from '../../components/FormParts';
import { Badge, Button, Code, Group, Modal, Stack, Table, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { AnchorLink } from '../../components/links';
import { QueryError } from '../../components/RouteError';
import { type RevealedValue, SecretReveal } from '../../components/SecretReveal';
import { useOrgSlug } from '../../lib/org';
import { keys, rulesQuery, webhooksQuery } from '../../lib/queries';
import { emptyWebhook, toWebhookBody, WebhookForm, type WebhookFormValues } from './WebhookForm';

/** Spec 2.6: the org's action webhooks; a new one shows its URL and secret once. */
export function WebhooksPage() {
  const org = useOrgSlug();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const webhooks = useQuery(webhooksQuery(org));
  const { data: rules = [] } = useQuery(rulesQuery(org));
  const [creating, { open, close }] = useDisclosure(false);
  const [created, setCreated] = useState<{ id: string; values: RevealedValue[] } | null>(null);
  const create = useMutation({
    mutationFn: (values: WebhookFormValues) =>
      unwrap(api.POST('/orgs/{org}/webhooks', { params: { path: { org } }, body: toWebhookBody(values) })),
    onSuccess: (result) => {
      close();
      void queryClient.invalidateQueries({ queryKey: keys.org(org) });
      setCreated({
        id: result.webhook.id,
        values: [
          { label: 'URL', value: result.url },
          { label: 'Secret', value: result.secret },
        ],
      });
    },
  });
  const ruleName = (id: string | null) => rules.find((rule) => rule.id === id)?.name ?? '—';

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={1} size="h2">
          Webhooks
        </Title>
        <Button onClick={open}>New webhook</Button>
      </Group>
      {webhooks.error && <QueryError error={webhooks.error} />}
      {webhooks.isSuccess && webhooks.data.length === 0 && (
        <EmptyState>
          No webhooks yet. A webhook is the URL an outside system posts its events to; each accepted event becomes an action.
        </EmptyState>
      )}
      {(webhooks.data?.length ?? 0) > 0 && (
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
            {webhooks.data?.map((webhook) => (
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
      )}
      <Modal
        opened={creating}
        onClose={() => {
          close();
          create.reset(); // its refusal was of what this dialog held
        }}
        title="New webhook"
        size="xl"
      >
        <WebhookForm
          org={org}
          initial={emptyWebhook}
          submitLabel="Create webhook"
          busy={create.isPending}
          onSubmit={(values) => create.mutate(values)}
          refusal={<FormError title="Not created" error={create.error} />}
        />
      </Modal>
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
