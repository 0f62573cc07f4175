import { Button, Group, Stack, Text, Textarea } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client';
import { prettyJson } from '../lib/format';
import { keys, toolsQuery } from '../lib/queries';
import { ArgumentFields, argumentsOf, flatSchema } from './ArgumentFields';
import { Dialog } from './Dialog';
import { FormError } from './FormParts';
import { approvalNotices } from '../lib/notices';

/** The arguments as typed: a JSON object, or why not. */
function parseArguments(text: string): { value: Record<string, unknown> } | { problem: string } {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? { value: value as Record<string, unknown> }
      : { problem: 'The arguments are a JSON object: { "name": value, ... }' };
  } catch (error) {
    return { problem: `Not JSON: ${(error as Error).message}` };
  }
}

/**
 * Approve with edits: the model's arguments, one field each when the tool's schema is flat (JSON
 * otherwise), for a person to correct before the call runs
 * with them. The server checks them against the tool's schema and the rule's argument rules; what it
 * refuses is shown here, and the call keeps waiting.
 */
export function EditAndApprove({ opened, ...props }: EditedCall & { opened: boolean }) {
  return (
    <Dialog value={opened || null} onClose={props.onClose} title={() => `Edit and approve ${props.toolName}`} size="lg">
      {(_, close) => <EditForm {...props} onClose={close} />}
    </Dialog>
  );
}

interface EditedCall {
  org: string;
  actionId: string;
  toolCallId: string;
  toolName: string;
  input: unknown;
  onClose: () => void;
}

/** The arguments and the reason of one opening: what was typed in another is not kept. */
function EditForm(props: EditedCall) {
  const { org, actionId, toolCallId, toolName } = props;
  const queryClient = useQueryClient();
  const { data: tools } = useQuery(toolsQuery(org));
  const schema = flatSchema(tools?.find((tool) => tool.name === toolName)?.inputSchema);
  const [text, setText] = useState(() => prettyJson(props.input));
  const [fields, setFields] = useState<Record<string, unknown>>(() => ({ ...(props.input as Record<string, unknown>) }));
  const [reason, setReason] = useState('');
  const parsed = schema ? { value: argumentsOf(schema, fields) } : parseArguments(text);
  const { succeeded } = approvalNotices(toolCallId);
  const approve = useMutation({
    mutationFn: (args: Record<string, unknown>) =>
      unwrap(
        api.POST('/orgs/{org}/actions/{actionId}/tool-calls/{toolCallId}/approve', {
          params: { path: { org, actionId, toolCallId } },
          body: { arguments: args, ...(reason.trim() && { reason: reason.trim() }) },
        }),
      ),
    onSuccess: (call) => {
      props.onClose();
      const count = call.status === 'pending' ? ` (${call.approvals.length} of ${call.approvalsRequired} approvals)` : '';
      succeeded(`Approved ${toolName} with your arguments${count}`);
      void queryClient.invalidateQueries({ queryKey: keys.org(org) });
    },
  });
  return (
    <Stack>
      <Text size="sm">The call runs with these arguments instead of the model's; the model is told that you changed them.</Text>
      {schema ? (
        <ArgumentFields
          schema={schema}
          initial={(props.input ?? {}) as Record<string, unknown>}
          values={fields}
          onChange={(values) => {
            setFields(values);
            approve.reset();
          }}
        />
      ) : (
        <Textarea
          label="Arguments (JSON)"
          autosize
          minRows={6}
          ff="monospace"
          value={text}
          onChange={(event) => {
            setText(event.currentTarget.value);
            approve.reset(); // the server's last refusal was of other arguments
          }}
          error={'problem' in parsed ? parsed.problem : undefined}
          data-autofocus
        />
      )}
      <Textarea
        label="Why (optional)"
        description="Kept in the ledger with your approval, for the other approvers and the record"
        autosize
        minRows={2}
        maxLength={2000}
        value={reason}
        onChange={(event) => setReason(event.currentTarget.value)}
      />
      <FormError error={approve.error} />
      <Group justify="flex-end">
        <Button variant="default" onClick={props.onClose}>
          Cancel
        </Button>
        <Button
          color="teal"
          disabled={'problem' in parsed}
          loading={approve.isPending}
          onClick={() => 'value' in parsed && approve.mutate(parsed.value)}
        >
          Approve with these arguments
        </Button>
      </Group>
    </Stack>
  );
}
