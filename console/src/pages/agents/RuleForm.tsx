import { type Refusable, SubmitRow, SwitchField } from '../../components/FormParts';
import { zodResolver } from '@hookform/resolvers/zod';
import { Group, NumberInput, Select, Stack, Textarea, TextInput } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Controller, useForm, useWatch } from 'react-hook-form';
import { z } from 'zod';
import { agentsQuery } from '../../lib/queries';
import type { paths } from '../../api/schema';
import { argumentRuleField, ruleField, ruleValue } from '../../components/ArgumentRules';
import { CallRules, toolModesField } from '../../components/CallRules';
import { ApproversSection, approversBody, approversFields, approversValues, choosesApprovers } from '../../components/Approvers';

const ruleSchema = z
  .object({
    name: z.string().trim().min(1, 'Name it').max(200),
    agentId: z.string().nullable(),
    instructions: z.string().max(50_000),
    enabled: z.boolean(),
    approvalRules: toolModesField,
    argumentRules: z.array(argumentRuleField).max(50),
    approvalTimeoutSeconds: z.number().int().min(1).max(2_592_000),
    ...approversFields,
  })
  .refine(...choosesApprovers);
export type RuleValues = z.infer<typeof ruleSchema>;
export const emptyRule: RuleValues = {
  name: '',
  agentId: null,
  instructions: '',
  enabled: true,
  approvalRules: {},
  argumentRules: [],
  approvalTimeoutSeconds: 86_400,
  allAdmins: true,
  approverIds: [],
  minApprovals: 1,
  notifyEmail: false,
  notifySlack: false,
};
type ActionRule =
  paths['/orgs/{org}/action-rules']['get']['responses'][200]['content']['application/json']['actionRules'][number];
/** A saved rule as the form edits it. */
export const ruleValues = ({ approvers, minApprovals, notify, ...rule }: ActionRule): RuleValues => ({
  ...rule,
  argumentRules: rule.argumentRules.map(ruleField),
  ...approversValues({ approvers, minApprovals, notify }),
});
/** The form's values as the API's body. */
export const toRuleBody = ({ allAdmins, approverIds, minApprovals, notifyEmail, notifySlack, ...values }: RuleValues) => ({
  ...values,
  argumentRules: values.argumentRules.map(ruleValue),
  ...approversBody({ allAdmins, approverIds, minApprovals, notifyEmail, notifySlack }),
});

/** An action rule: which agent acts, with what instructions, and the approval mode of each tool (spec 2.7). */
export function RuleForm(
  props: {
    org: string;
    initial: RuleValues;
    submitLabel: string;
    busy: boolean;
    onSubmit: (values: RuleValues) => void;
  } & Refusable,
) {
  const { data: agents = [] } = useQuery(agentsQuery(props.org));
  const form = useForm<RuleValues>({ resolver: zodResolver(ruleSchema), defaultValues: props.initial });
  const errors = form.formState.errors;
  const agentId = useWatch({ control: form.control, name: 'agentId' });
  return (
    <form onSubmit={form.handleSubmit(props.onSubmit)} noValidate>
      <Stack>
        <TextInput label="Name" {...form.register('name')} error={errors.name?.message} />
        <Controller
          control={form.control}
          name="agentId"
          render={({ field }) => (
            <Select
              label="Agent"
              placeholder="Choose the agent"
              clearable
              data={agents.map((agent) => ({ value: agent.id, label: agent.name }))}
              value={field.value}
              onChange={field.onChange}
            />
          )}
        />
        <Textarea
          label="Instructions"
          description="Added to the agent's for events of this rule."
          autosize
          minRows={2}
          {...form.register('instructions')}
        />
        <CallRules org={props.org} agentId={agentId} control={form.control} register={form.register} errors={errors} />
        <ApproversSection org={props.org} calls="this rule's waiting calls" control={form.control} errors={errors} />
        <Group grow align="flex-end">
          <Controller
            control={form.control}
            name="approvalTimeoutSeconds"
            render={({ field }) => (
              <NumberInput
                label="Approval deadline (seconds)"
                description="A staged call expires after this long."
                min={1}
                max={2592000}
                value={field.value}
                onChange={(value) => field.onChange(Number(value))}
                error={errors.approvalTimeoutSeconds?.message}
              />
            )}
          />
          <SwitchField control={form.control} name="enabled" label="Enabled" />
        </Group>
        <SubmitRow label={props.submitLabel} busy={props.busy} refusal={props.refusal} />
      </Stack>
    </form>
  );
}
