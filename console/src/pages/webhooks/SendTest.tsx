import { SubmitRow } from '../../components/FormParts';
import { zodResolver } from '@hookform/resolvers/zod';
import { Alert, Badge, Group, JsonInput, Select, SimpleGrid, Stack, Text, TextInput } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Controller, useForm } from 'react-hook-form';
import { z } from 'zod';
import { api, unwrap } from '../../api/client';
import { JsonBlock } from '../../components/JsonBlock';
import { membersQuery } from '../../lib/queries';

const isJsonObject = (text: string) => {
  try {
    const value = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
};

const testSchema = z.object({
  eventType: z.string().trim().min(1, 'An event type').max(200),
  externalId: z.string().max(500),
  data: z.string().refine(isJsonObject, 'A JSON object'),
  userId: z.string().nullable(),
});
type TestValues = z.infer<typeof testSchema>;

/**
 * Send Test: a signed event through the webhook's public URL, exactly as a sender would post it,
 * or, with an internal user chosen, an action created directly as that user.
 */
export function SendTest({ org, webhookId }: { org: string; webhookId: string }) {
  const { data: members = [] } = useQuery(membersQuery(org));
  const form = useForm<TestValues>({
    resolver: zodResolver(testSchema),
    defaultValues: { eventType: 'test.event', externalId: '', data: '{\n  "test": true\n}', userId: null },
  });
  const send = useMutation({
    mutationFn: (values: TestValues) =>
      unwrap(
        api.POST('/orgs/{org}/webhooks/{id}/test', {
          params: { path: { org, id: webhookId } },
          body: {
            eventType: values.eventType,
            data: JSON.parse(values.data) as Record<string, unknown>,
            ...(values.externalId ? { externalId: values.externalId } : {}),
            ...(values.userId ? { userId: values.userId } : {}),
          },
        }),
      ),
  });
  const errors = form.formState.errors;
  return (
    <SimpleGrid cols={{ base: 1, lg: 2 }}>
      <form onSubmit={form.handleSubmit((values) => send.mutate(values))} noValidate>
        <Stack>
          <Group grow>
            <TextInput label="Event type" {...form.register('eventType')} error={errors.eventType?.message} />
            <TextInput label="External id" placeholder="Generated when empty" {...form.register('externalId')} />
          </Group>
          <Controller
            control={form.control}
            name="data"
            render={({ field }) => (
              <JsonInput
                label="Data"
                autosize
                minRows={6}
                formatOnBlur
                value={field.value}
                onChange={field.onChange}
                error={errors.data?.message}
              />
            )}
          />
          <Controller
            control={form.control}
            name="userId"
            render={({ field }) => (
              <Select
                label="Run as an internal user (optional)"
                description="Creates the action directly as this user, without a signature."
                clearable
                placeholder="No: post it signed to the public URL"
                data={members.map((member) => ({ value: member.id, label: member.email }))}
                value={field.value}
                onChange={field.onChange}
              />
            )}
          />
          <SubmitRow label="Send test event" busy={send.isPending} />
        </Stack>
      </form>
      <Stack gap="xs" aria-live="polite">
        <Text fw={600}>Answer</Text>
        {send.error && <Alert color="red">{send.error.message}</Alert>}
        {send.data ? (
          <>
            <Group gap="xs">
              <Badge variant="outline" tt="none">
                {send.data.mode === 'http' ? 'posted to the public URL' : 'created directly'}
              </Badge>
              <Badge variant="dot" color={send.data.statusCode < 300 ? 'green' : 'red'} tt="none">
                HTTP {send.data.statusCode}
              </Badge>
            </Group>
            <JsonBlock value={send.data.response} label="Test answer" />
          </>
        ) : (
          !send.error && (
            <Text size="sm" c="dimmed">
              The service's answer shows here.
            </Text>
          )
        )}
      </Stack>
    </SimpleGrid>
  );
}
