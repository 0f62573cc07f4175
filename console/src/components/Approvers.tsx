import { Checkbox, MultiSelect, NumberInput, Stack, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Fragment } from 'react';
import { type Control, Controller, type FieldErrors } from 'react-hook-form';
import { z } from 'zod';
import { membersQuery } from '../lib/queries';
import { SwitchField } from './FormParts';
import { UserName } from './UserName';

/**
 * Who decides waiting calls, how many must approve, and how they are told, as the forms of an action
 * rule and of an inbox's assignment edit it (the API's `approvers`, `minApprovals` and `notify`).
 */
export const approversFields = {
  allAdmins: z.boolean(),
  approverIds: z.array(z.string()).max(50),
  minApprovals: z.number().int('A whole number').min(1, 'At least 1').max(5, 'At most 5'),
  notifyEmail: z.boolean(),
  notifySlack: z.boolean(),
};
export type ApproversValues = {
  allAdmins: boolean;
  approverIds: string[];
  minApprovals: number;
  notifyEmail: boolean;
  notifySlack: boolean;
};
/** A form with these fields names somebody who decides: every admin, or members. */
export const choosesApprovers: [
  (values: { allAdmins: boolean; approverIds: string[] }) => boolean,
  { path: string[]; message: string },
] = [(values) => values.allAdmins || values.approverIds.length > 0, { path: ['approverIds'], message: 'Choose who decides' }];
type NotifyChannel = 'email' | 'slack';
type Approvers = { userIds?: string[]; role?: 'Admin' } | null;

/** The API's `approvers` (null: the org's admins) and `notify` as the form's fields. */
export const approversValues = (rule: {
  approvers: Approvers;
  minApprovals: number;
  notify: NotifyChannel[];
}): ApproversValues => ({
  allAdmins: rule.approvers === null || rule.approvers.role === 'Admin',
  approverIds: rule.approvers?.userIds ?? [],
  minApprovals: rule.minApprovals,
  notifyEmail: rule.notify.includes('email'),
  notifySlack: rule.notify.includes('slack'),
});
/** The form's fields as the API's body: all admins and nobody named is the default (null). */
export const approversBody = ({ allAdmins, approverIds, minApprovals, notifyEmail, notifySlack }: ApproversValues) => ({
  minApprovals,
  approvers:
    allAdmins && approverIds.length === 0
      ? null
      : { ...(approverIds.length > 0 ? { userIds: approverIds } : {}), ...(allAdmins ? { role: 'Admin' as const } : {}) },
  notify: [...(notifyEmail ? ['email' as const] : []), ...(notifySlack ? ['slack' as const] : [])],
});

/** "Approvers": the fields of `approversFields`, in the form of a rule or an inbox's assignment. */
export function ApproversSection<T extends ApproversValues>(props: {
  org: string;
  /** Whose calls they decide: "this rule's waiting calls". */
  calls: string;
  control: Control<T>;
  errors: FieldErrors<T>;
}) {
  const { data: members = [] } = useQuery(membersQuery(props.org));
  // The generic form narrows to the fields this section edits.
  const control = props.control as unknown as Control<ApproversValues>;
  const errors = props.errors as FieldErrors<ApproversValues>;
  return (
    <Stack gap={6}>
      <Text size="sm" fw={500}>
        Approvers
      </Text>
      <Text size="xs" c="dimmed">
        Who may decide {props.calls} (in the console, the API, the approval email or Slack).
      </Text>
      <Controller
        control={control}
        name="allAdmins"
        render={({ field }) => (
          <Checkbox
            label="Every admin of the organization"
            checked={field.value}
            onChange={(event) => field.onChange(event.currentTarget.checked)}
          />
        )}
      />
      <Controller
        control={control}
        name="approverIds"
        render={({ field }) => (
          <MultiSelect
            label="Members who may decide"
            placeholder={field.value.length === 0 ? 'Add members' : undefined}
            searchable
            data={members.map((member) => ({ value: member.id, label: member.email }))}
            value={field.value}
            onChange={field.onChange}
            error={errors.approverIds?.message}
          />
        )}
      />
      <Controller
        control={control}
        name="minApprovals"
        render={({ field }) => (
          <NumberInput
            label="Approvals needed"
            description="How many different approvers must approve a call before it runs; one rejection rejects it."
            min={1}
            max={5}
            maw={320}
            allowDecimal={false}
            value={field.value}
            onChange={(value) => field.onChange(Number(value))}
            error={errors.minApprovals?.message}
          />
        )}
      />
      <SwitchField
        control={control}
        name="notifyEmail"
        label="Email the approvers when a call waits"
        description="Each approver gets one email per action with Approve and Reject links, and may reply approve or reject."
      />
      <SwitchField
        control={control}
        name="notifySlack"
        label="Post in Slack when a call waits"
        description="One message per action in the org's Slack channel, with Approve, Edit, Send back and Reject."
      />
    </Stack>
  );
}

/** Who decides, in a line: the members named, the org's admins, and how many approvals a call needs. */
export function DecidedBy({ org, approvers, minApprovals }: { org: string; approvers: Approvers; minApprovals: number }) {
  const named = approvers?.userIds ?? [];
  const admins = approvers === null || approvers.role === 'Admin';
  return (
    <Text size="xs" c="dimmed">
      decided by{' '}
      {named.map((userId, index) => (
        <Fragment key={userId}>
          {index > 0 && ', '}
          <UserName org={org} userId={userId} />
        </Fragment>
      ))}
      {named.length > 0 && admins && ' and '}
      {admins && "the org's admins"}
      {minApprovals > 1 && `; ${minApprovals} approvals per call`}
    </Text>
  );
}
