import { type Refusable, SubmitRow, SwitchField } from '../../components/FormParts';
import { zodResolver } from '@hookform/resolvers/zod';
import { Group, JsonInput, NumberInput, Select, SimpleGrid, Stack, TagsInput, TextInput } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Controller, useForm } from 'react-hook-form';
import { z } from 'zod';
import { agentsQuery, membersQuery, rulesQuery } from '../../lib/queries';

const scheduleSchema = z.object({
  timezone: z.string().min(1).default('UTC'),
  windows: z.array(z.object({ days: z.array(z.number().int().min(0).max(6)).min(1), start: z.string(), end: z.string() })).min(1),
});

/** The schedule as JSON text: empty for none, else what scheduleSchema takes. */
const scheduleText = z.string().refine(
  (text) => {
    if (!text.trim()) return true;
    try {
      return scheduleSchema.safeParse(JSON.parse(text)).success;
    } catch {
      return false;
    }
  },
  {
    message:
      'A schedule is { "timezone": "Europe/Berlin", "windows": [{ "days": [1,2,3,4,5], "start": "09:00", "end": "17:00" }] }',
  },
);

export const webhookFormSchema = z.object({
  name: z.string().trim().min(1, 'Name it').max(200),
  actionRuleId: z.string().nullable(),
  agentId: z.string().nullable(),
  runAsUserId: z.string().nullable(),
  verificationScheme: z.enum(['wh', 'hmac_sha256', 'shared_token', 'none']),
  eventFilter: z.array(z.string().min(1).max(200)).max(100),
  rateLimitPerMinute: z.number().int().min(1).max(1000),
  maxPayloadBytes: z
    .number()
    .int()
    .min(1024)
    .max(10 * 1024 * 1024),
  allowRequestOverrides: z.boolean(),
  enabled: z.boolean(),
  allowedOrigins: z.array(z.url('An origin such as https://app.example.com')).max(50),
  blockedIps: z.array(z.string().min(1)).max(500),
  schedule: scheduleText,
});
export type WebhookFormValues = z.infer<typeof webhookFormSchema>;

export const emptyWebhook: WebhookFormValues = {
  name: '',
  actionRuleId: null,
  agentId: null,
  runAsUserId: null,
  verificationScheme: 'wh',
  eventFilter: [],
  rateLimitPerMinute: 100,
  maxPayloadBytes: 262_144,
  allowRequestOverrides: false,
  enabled: true,
  allowedOrigins: [],
  blockedIps: [],
  schedule: '',
};

/** The API's body: the schedule parsed, nothing else changed. */
export const toWebhookBody = ({ schedule, ...values }: WebhookFormValues) => ({
  ...values,
  schedule: schedule.trim() ? scheduleSchema.parse(JSON.parse(schedule)) : null,
});

const SCHEMES = [
  { value: 'wh', label: 'Standard Webhooks (wh-signature)' },
  { value: 'hmac_sha256', label: 'HMAC-SHA256 of the body' },
  { value: 'shared_token', label: 'Shared token' },
  { value: 'none', label: 'None (not verified)' },
];

/** Every aspect of an action webhook (spec 2.6), for create and edit. */
export function WebhookForm(
  props: {
    org: string;
    initial: WebhookFormValues;
    submitLabel: string;
    busy: boolean;
    onSubmit: (values: WebhookFormValues) => void;
  } & Refusable,
) {
  const { org } = props;
  const { data: rules = [] } = useQuery(rulesQuery(org));
  const { data: agents = [] } = useQuery(agentsQuery(org));
  const { data: members = [] } = useQuery(membersQuery(org));
  const form = useForm<WebhookFormValues>({ resolver: zodResolver(webhookFormSchema), defaultValues: props.initial });
  const errors = form.formState.errors;
  const select = (
    name: 'actionRuleId' | 'agentId' | 'runAsUserId',
    label: string,
    data: { value: string; label: string }[],
    placeholder: string,
  ) => (
    <Controller
      control={form.control}
      name={name}
      render={({ field }) => (
        <Select label={label} placeholder={placeholder} clearable data={data} value={field.value} onChange={field.onChange} />
      )}
    />
  );
  const tags = (name: 'eventFilter' | 'allowedOrigins' | 'blockedIps', label: string, description: string) => (
    <Controller
      control={form.control}
      name={name}
      render={({ field }) => (
        <TagsInput
          label={label}
          description={description}
          value={field.value}
          onChange={field.onChange}
          error={errors[name]?.message ?? errors[name]?.[0]?.message}
          clearable
        />
      )}
    />
  );
  return (
    <form onSubmit={form.handleSubmit(props.onSubmit)} noValidate>
      <Stack>
        <TextInput label="Name" {...form.register('name')} error={errors.name?.message} />
        <SimpleGrid cols={{ base: 1, sm: 3 }}>
          {select(
            'actionRuleId',
            'Action rule',
            rules.map((rule) => ({ value: rule.id, label: rule.name })),
            'None: events are buffered',
          )}
          {select(
            'agentId',
            'Agent (overrides the rule’s)',
            agents.map((agent) => ({ value: agent.id, label: agent.name })),
            'The rule’s agent',
          )}
          {select(
            'runAsUserId',
            'Run as (default user)',
            members.map((member) => ({ value: member.id, label: member.email })),
            'From the event, if it names one',
          )}
        </SimpleGrid>
        <SimpleGrid cols={{ base: 1, sm: 3 }}>
          <Controller
            control={form.control}
            name="verificationScheme"
            render={({ field }) => (
              <Select
                label="Verification"
                data={SCHEMES}
                value={field.value}
                onChange={(value) => field.onChange(value ?? 'wh')}
                allowDeselect={false}
              />
            )}
          />
          <Controller
            control={form.control}
            name="rateLimitPerMinute"
            render={({ field }) => (
              <NumberInput
                label="Rate limit per minute"
                min={1}
                max={1000}
                value={field.value}
                onChange={(value) => field.onChange(Number(value))}
                error={errors.rateLimitPerMinute?.message}
              />
            )}
          />
          <Controller
            control={form.control}
            name="maxPayloadBytes"
            render={({ field }) => (
              <NumberInput
                label="Largest payload (bytes)"
                min={1024}
                max={10485760}
                value={field.value}
                onChange={(value) => field.onChange(Number(value))}
                error={errors.maxPayloadBytes?.message}
              />
            )}
          />
        </SimpleGrid>
        {tags('eventFilter', 'Event filter', 'Only these event types become actions (empty: all). Press Enter after each.')}
        <SimpleGrid cols={{ base: 1, sm: 2 }}>
          {tags('allowedOrigins', 'Allowed origins', 'Requests with another Origin are refused (empty: any).')}
          {tags('blockedIps', 'Blocked sender IPs', 'Addresses or CIDR ranges refused with 403.')}
        </SimpleGrid>
        <Controller
          control={form.control}
          name="schedule"
          render={({ field }) => (
            <JsonInput
              label="Schedule"
              description="When events may run (empty: always); outside it they are buffered until the next window."
              placeholder='{ "timezone": "UTC", "windows": [{ "days": [1,2,3,4,5], "start": "09:00", "end": "17:00" }] }'
              autosize
              minRows={2}
              value={field.value}
              onChange={field.onChange}
              error={errors.schedule?.message}
            />
          )}
        />
        <Group>
          <SwitchField control={form.control} name="enabled" label="Enabled" />
          <SwitchField
            control={form.control}
            name="allowRequestOverrides"
            label="Allow per-request overrides (tool modes in the event)"
          />
        </Group>
        <SubmitRow label={props.submitLabel} busy={props.busy} refusal={props.refusal} />
      </Stack>
    </form>
  );
}
