import { SubmitRow, EmptyState } from '../../components/FormParts';
import { zodResolver } from '@hookform/resolvers/zod';
import { Badge, Button, Card, Checkbox, Group, Stack, Switch, Text, TextInput } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Controller, useForm } from 'react-hook-form';
import { z } from 'zod';
import { api, type CallbackDelivery, unwrap } from '../../api/client';
import { QueryError } from '../../components/RouteError';
import { type RevealedValue, SecretReveal } from '../../components/SecretReveal';
import { formatTime } from '../../lib/format';
import { keys } from '../../lib/queries';
import { CallbackDeliveries } from './CallbackDeliveries';
import { pageNotices } from '../../lib/notices';

// Every event type the API has, in lifecycle order: this record fails type-checking when one is missing.
const EVENT_TYPES = {
  'action.pending_approval': true,
  'action.approved': true,
  'action.completed': true,
  'action.failed': true,
  'action.rejected': true,
  'action.expired': true,
} as const satisfies Record<CallbackDelivery['eventType'], true>;
type EventType = keyof typeof EVENT_TYPES;
export const CALLBACK_EVENTS = Object.keys(EVENT_TYPES) as [EventType, ...EventType[]];

const endpointSchema = z.object({
  url: z.url('An http(s) URL').max(2000),
  description: z.string().max(500),
  events: z.array(z.enum(CALLBACK_EVENTS)).min(1, 'At least one event'),
});
type EndpointValues = z.infer<typeof endpointSchema>;

/** A webhook's callback endpoints (spec 4.2): where each action's lifecycle is reported, signed. */
export function CallbackEndpoints({ org, webhookId }: { org: string; webhookId: string }) {
  const queryClient = useQueryClient();
  const path = { org, webhookId };
  const queryKey = [...keys.org(org), 'callbacks', webhookId];
  const endpoints = useQuery({
    queryKey,
    queryFn: () =>
      unwrap(api.GET('/orgs/{org}/webhooks/{webhookId}/callbacks', { params: { path } })).then((body) => body.callbacks),
  });
  const [revealed, setRevealed] = useState<RevealedValue[] | null>(null);
  const [adding, { toggle: toggleAdding, close: closeAdding }] = useDisclosure(false);
  const refresh = () => void queryClient.invalidateQueries({ queryKey });
  const form = useForm<EndpointValues>({
    resolver: zodResolver(endpointSchema),
    defaultValues: { url: '', description: '', events: [...CALLBACK_EVENTS] },
  });
  const { failed, succeeded } = pageNotices(`callback-endpoints-${webhookId}`);
  const create = useMutation({
    mutationFn: (body: EndpointValues) =>
      unwrap(api.POST('/orgs/{org}/webhooks/{webhookId}/callbacks', { params: { path }, body })),
    onSuccess: (result) => {
      succeeded();
      closeAdding();
      form.reset();
      setRevealed([{ label: 'Signing secret', value: result.secret }]);
    },
    onError: failed('Not added'),
    onSettled: refresh,
  });
  const update = useMutation({
    mutationFn: ({ callbackId, enabled }: { callbackId: string; enabled: boolean }) =>
      unwrap(
        api.PATCH('/orgs/{org}/webhooks/{webhookId}/callbacks/{callbackId}', {
          params: { path: { ...path, callbackId } },
          body: { enabled },
        }),
      ),
    onSuccess: () => succeeded(),
    onError: failed('Not changed'),
    onSettled: refresh,
  });
  const rotate = useMutation({
    mutationFn: (callbackId: string) =>
      unwrap(
        api.POST('/orgs/{org}/webhooks/{webhookId}/callbacks/{callbackId}/rotate-secret', {
          params: { path: { ...path, callbackId } },
        }),
      ),
    onSuccess: (result) => {
      succeeded();
      setRevealed([{ label: 'Signing secret', value: result.secret }]);
    },
    onError: failed('Not rotated'),
  });
  const errors = form.formState.errors;

  return (
    <Stack>
      <Group justify="space-between">
        <Text size="sm" c="dimmed">
          Each endpoint receives the chosen lifecycle events of this webhook's actions, signed with its own secret (Standard
          Webhooks).
        </Text>
        <Button variant="light" onClick={toggleAdding}>
          Add endpoint
        </Button>
      </Group>
      {adding && (
        <Card withBorder>
          <form onSubmit={form.handleSubmit((values) => create.mutate(values))} noValidate>
            <Stack>
              <TextInput
                label="Endpoint URL"
                placeholder="https://example.com/agent-callbacks"
                {...form.register('url')}
                error={errors.url?.message}
              />
              <TextInput label="Description" {...form.register('description')} />
              <Controller
                control={form.control}
                name="events"
                render={({ field }) => (
                  <Checkbox.Group label="Events" value={field.value} onChange={field.onChange} error={errors.events?.message}>
                    <Group mt="xs">
                      {CALLBACK_EVENTS.map((event) => (
                        <Checkbox key={event} value={event} label={event} />
                      ))}
                    </Group>
                  </Checkbox.Group>
                )}
              />
              <SubmitRow label="Add endpoint" busy={create.isPending} />
            </Stack>
          </form>
        </Card>
      )}
      {endpoints.error && <QueryError error={endpoints.error} />}
      {endpoints.isSuccess && endpoints.data.length === 0 && !adding && <EmptyState>No callback endpoints.</EmptyState>}
      {endpoints.data?.map((endpoint) => (
        <Card key={endpoint.id} withBorder data-endpoint-url={endpoint.url}>
          <Group justify="space-between" align="flex-start">
            <Stack gap={4}>
              <Text ff="monospace" size="sm">
                {endpoint.url}
              </Text>
              {endpoint.description && <Text size="sm">{endpoint.description}</Text>}
              <Group gap={4}>
                {endpoint.events.map((event) => (
                  <Badge key={event} variant="outline" tt="none" size="sm">
                    {event}
                  </Badge>
                ))}
              </Group>
              {!endpoint.enabled && endpoint.disabledReason && (
                <Text size="sm" c="red.9">
                  Disabled {formatTime(endpoint.disabledAt)}: {endpoint.disabledReason}
                </Text>
              )}
              {endpoint.failingSince && (
                <Text size="sm" c="orange.9">
                  Failing since {formatTime(endpoint.failingSince)}
                </Text>
              )}
            </Stack>
            <Stack gap="xs" align="flex-end">
              <Switch
                label="Enabled"
                checked={endpoint.enabled}
                onChange={(event) => update.mutate({ callbackId: endpoint.id, enabled: event.currentTarget.checked })}
              />
              <Button size="xs" variant="default" onClick={() => rotate.mutate(endpoint.id)}>
                Rotate secret
              </Button>
            </Stack>
          </Group>
          <CallbackDeliveries org={org} webhookId={webhookId} callbackId={endpoint.id} />
        </Card>
      ))}
      <SecretReveal title="Callback signing secret" values={revealed} onClose={() => setRevealed(null)} />
    </Stack>
  );
}
