import { zodResolver } from '@hookform/resolvers/zod';
import { Button, Group, Modal, Stack, Textarea } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import { api, unwrap } from '../api/client';
import { keys } from '../lib/queries';
import { EditAndApprove } from './EditAndApprove';

const rejectSchema = z.object({ reason: z.string().trim().min(1, 'Say why, for the agent and the ledger').max(2000) });

/** Approve, or reject with a reason: one pending tool call (spec 4.2.5). */
export function ApprovalButtons({
  org,
  actionId,
  toolCallId,
  toolName,
  input,
}: {
  org: string;
  actionId: string;
  toolCallId: string;
  toolName: string;
  /** The model's arguments: with them, the call can be edited before it is approved. */
  input?: unknown;
}) {
  const queryClient = useQueryClient();
  const [rejecting, { open, close }] = useDisclosure(false);
  const [editing, editor] = useDisclosure(false);
  const form = useForm<z.infer<typeof rejectSchema>>({ resolver: zodResolver(rejectSchema), defaultValues: { reason: '' } });
  const path = { org, actionId, toolCallId };
  const settled = () => void queryClient.invalidateQueries({ queryKey: keys.org(org) });
  const approve = useMutation({
    mutationFn: () => unwrap(api.POST('/orgs/{org}/actions/{actionId}/tool-calls/{toolCallId}/approve', { params: { path } })),
    onSuccess: () => notifications.show({ color: 'green', message: `Approved ${toolName}` }),
    onError: (error) => notifications.show({ color: 'red', title: 'Not approved', message: error.message }),
    onSettled: settled,
  });
  const reject = useMutation({
    mutationFn: (reason: string) =>
      unwrap(api.POST('/orgs/{org}/actions/{actionId}/tool-calls/{toolCallId}/reject', { params: { path }, body: { reason } })),
    onSuccess: () => {
      close();
      notifications.show({ color: 'gray', message: `Rejected ${toolName}` });
    },
    onError: (error) => notifications.show({ color: 'red', title: 'Not rejected', message: error.message }),
    onSettled: settled,
  });
  const busy = approve.isPending || reject.isPending;
  return (
    <>
      <Group gap="xs" wrap="nowrap">
        <Button
          size="xs"
          color="teal"
          onClick={() => approve.mutate()}
          loading={approve.isPending}
          disabled={busy}
          aria-label={`Approve ${toolName}`}
        >
          Approve
        </Button>
        {input !== undefined && (
          <Button
            size="xs"
            variant="default"
            onClick={editor.open}
            disabled={busy}
            aria-label={`Edit the arguments of ${toolName}`}
          >
            Edit
          </Button>
        )}
        <Button size="xs" color="red" variant="light" onClick={open} disabled={busy} aria-label={`Reject ${toolName}`}>
          Reject
        </Button>
      </Group>
      {editing && (
        <EditAndApprove
          org={org}
          actionId={actionId}
          toolCallId={toolCallId}
          toolName={toolName}
          input={input}
          opened={editing}
          onClose={editor.close}
        />
      )}
      <Modal opened={rejecting} onClose={close} title={`Reject ${toolName}`}>
        <form onSubmit={form.handleSubmit((values) => reject.mutate(values.reason))} noValidate>
          <Stack>
            <Textarea
              label="Reason"
              autosize
              minRows={3}
              data-autofocus
              {...form.register('reason')}
              error={form.formState.errors.reason?.message}
            />
            <Group justify="flex-end">
              <Button variant="default" onClick={close}>
                Cancel
              </Button>
              <Button type="submit" color="red" loading={reject.isPending}>
                Reject
              </Button>
            </Group>
          </Stack>
        </form>
      </Modal>
    </>
  );
}
