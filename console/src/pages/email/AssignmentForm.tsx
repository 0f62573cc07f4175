import { zodResolver } from '@hookform/resolvers/zod';
import { Stack } from '@mantine/core';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import type { components } from '../../api/schema';
import { ApproversSection, approversBody, approversFields, approversValues, choosesApprovers } from '../../components/Approvers';
import { argumentRuleField, ruleField, ruleValue } from '../../components/ArgumentRules';
import { type Refusable, SubmitRow, SwitchField } from '../../components/FormParts';
import { CallRules, toolModesField } from '../../components/CallRules';

export type AssignmentRow = components['schemas']['InboxAgentAssignment'];

const assignmentSchema = z
  .object({
    isPrimary: z.boolean(),
    autoRespond: z.boolean(),
    approvalRules: toolModesField,
    argumentRules: z.array(argumentRuleField).max(50),
    ...approversFields,
  })
  .refine(...choosesApprovers);
export type AssignmentValues = z.infer<typeof assignmentSchema>;

/** What an agent can call on an inbox whatever its own tools: it can always answer the email. */
const INBOX_TOOLS = ['sendEmail'];
/** An inbox's modes when the assignment sets none (the server's default): replies go out, the rest asks. */
const INBOX_MODES = { sendEmail: 'allow' } as const;

/** The modes an assignment's calls run with. */
export const assignmentModes = (row: AssignmentRow) => row.approvalRules ?? INBOX_MODES;

/** A saved assignment as the form edits it. */
export const assignmentValues = (row: AssignmentRow): AssignmentValues => ({
  isPrimary: row.isPrimary,
  autoRespond: row.autoRespond,
  approvalRules: assignmentModes(row),
  argumentRules: row.argumentRules.map(ruleField),
  ...approversValues(row),
});
/** A new assignment: it answers every email, the org's admins decide; primary when it is the inbox's first agent. */
export const newAssignment = (firstAgent: boolean): AssignmentValues => ({
  isPrimary: firstAgent,
  autoRespond: true,
  approvalRules: INBOX_MODES,
  argumentRules: [],
  ...approversValues({ approvers: null, minApprovals: 1, notify: [] }),
});

/** The form's values as the API's body (of a new assignment, or of a change to one). */
export const toAssignmentBody = ({ isPrimary, autoRespond, approvalRules, argumentRules, ...approvers }: AssignmentValues) => ({
  isPrimary,
  autoRespond,
  approvalRules,
  argumentRules: argumentRules.map(ruleValue),
  ...approversBody(approvers),
});

/** An agent's assignment to an inbox: whether it answers every email, how its calls there run, and who decides them. */
export function AssignmentForm(
  props: {
    org: string;
    agentId: string;
    initial: AssignmentValues;
    submitLabel: string;
    busy: boolean;
    onSubmit: (values: AssignmentValues) => void;
  } & Refusable,
) {
  const form = useForm<AssignmentValues>({ resolver: zodResolver(assignmentSchema), defaultValues: props.initial });
  const errors = form.formState.errors;
  return (
    <form onSubmit={form.handleSubmit(props.onSubmit)} noValidate>
      <Stack>
        <SwitchField
          control={form.control}
          name="autoRespond"
          label="Answers every email"
          description="Each email to the inbox becomes an action of this agent, run as the admin who assigned it."
        />
        <SwitchField
          control={form.control}
          name="isPrimary"
          label="Primary"
          description="The inbox's first agent to answer; making it primary demotes the previous one."
        />
        <CallRules
          org={props.org}
          agentId={props.agentId}
          always={INBOX_TOOLS}
          control={form.control}
          register={form.register}
          errors={errors}
        />
        <ApproversSection
          org={props.org}
          calls="this agent's waiting calls on this inbox"
          control={form.control}
          errors={errors}
        />
        <SubmitRow label={props.submitLabel} busy={props.busy} refusal={props.refusal} />
      </Stack>
    </form>
  );
}
