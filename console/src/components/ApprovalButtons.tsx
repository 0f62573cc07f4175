import { zodResolver } from '@hookform/resolvers/zod';
import { Button, Group, Stack, Textarea } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useForm } from 'react-hook-form';
import { z } from 'zod';
import { api, unwrap } from '../api/client';
import { keys, meQuery } from '../lib/queries';
import { Dialog } from './Dialog';
import { EditAndApprove } from './EditAndApprove';
import { FormError } from './FormParts';
import { approvalNotices } from '../lib/notices';

const wordsSchema = z.object({ words: z.string().trim().min(1, 'Say it, for the agent and the ledger').max(2000) });

/** The decisions that need words: a rejection's reason, or the guidance a call is sent back with. */
const WORDED = {
  reject: { title: 'Reject', label: 'Reason', done: 'Rejected', color: 'red' },
  send_back: { title: 'Send back', label: 'What the agent should do instead', done: 'Sent back', color: 'violet' },
} as const;
type Worded = keyof typeof WORDED;

/** Approve (as it stands, or edited), send back with guidance, or reject with a reason: one pending tool call. */
export function ApprovalButtons({
  org,
  actionId,
  toolCallId,
  toolName,
  input,
  approvedBy,
}: {
  org: string;
  actionId: string;
  toolCallId: string;
  toolName: string;
  /** The arguments approvals are for (an approver's edit, or the model's): with them, it can be edited, or sent back. */
  input?: unknown;
  /** Who approved it so far, when its rule asks for several approvers: they have nothing more to approve. */
  approvedBy?: Array<string | null>;
}) {
  const me = useQuery(meQuery).data?.id;
  const approvedAlready = me !== undefined && (approvedBy ?? []).includes(me);
  const queryClient = useQueryClient();
  const [asking, setAsking] = useState<Worded | null>(null);
  const [editing, editor] = useDisclosure(false);
  const form = useForm<z.infer<typeof wordsSchema>>({ resolver: zodResolver(wordsSchema), defaultValues: { words: '' } });
  const path = { org, actionId, toolCallId };
  const settled = () => void queryClient.invalidateQueries({ queryKey: keys.org(org) });
  const { failed, succeeded } = approvalNotices(toolCallId);
  const approve = useMutation({
    mutationFn: () => unwrap(api.POST('/orgs/{org}/actions/{actionId}/tool-calls/{toolCallId}/approve', { params: { path } })),
    onSuccess: (call) =>
      succeeded(
        call.status === 'pending'
          ? `Approved ${toolName}: ${call.approvals.length} of ${call.approvalsRequired} approvals`
          : `Approved ${toolName}`,
      ),
    onError: failed('Not approved'),
    onSettled: settled,
  });
  const worded = useMutation({
    mutationFn: ({ kind, words }: { kind: Worded; words: string }) =>
      kind === 'reject'
        ? unwrap(
            api.POST('/orgs/{org}/actions/{actionId}/tool-calls/{toolCallId}/reject', {
              params: { path },
              body: { reason: words },
            }),
          )
        : unwrap(
            api.POST('/orgs/{org}/actions/{actionId}/tool-calls/{toolCallId}/respond', {
              params: { path },
              body: { message: words },
            }),
          ),
    onSuccess: (_, { kind }) => {
      setAsking(null);
      succeeded(`${WORDED[kind].done} ${toolName}`, 'gray');
    },
    onSettled: settled,
  });
  const busy = approve.isPending || worded.isPending;
  const ask = (kind: Worded) => {
    form.reset({ words: '' });
    worded.reset(); // a refusal of earlier words is not of these
    setAsking(kind);
  };
  return (
    <>
      <Group gap="xs" maw={260}>
        <Button
          size="xs"
          color="teal"
          onClick={() => approve.mutate()}
          loading={approve.isPending}
          disabled={busy || approvedAlready}
          aria-label={approvedAlready ? `You approved ${toolName}` : `Approve ${toolName}`}
        >
          {approvedAlready ? 'You approved' : 'Approve'}
        </Button>
        {input !== undefined && (
          <>
            <Button
              size="xs"
              variant="default"
              onClick={editor.open}
              disabled={busy}
              aria-label={`Edit the arguments of ${toolName}`}
            >
              Edit
            </Button>
            <Button
              size="xs"
              variant="default"
              onClick={() => ask('send_back')}
              disabled={busy}
              aria-label={`Send back ${toolName}`}
            >
              Send back
            </Button>
          </>
        )}
        <Button
          size="xs"
          color="red"
          variant="light"
          onClick={() => ask('reject')}
          disabled={busy}
          aria-label={`Reject ${toolName}`}
        >
          Reject
        </Button>
      </Group>
      <EditAndApprove
        org={org}
        actionId={actionId}
        toolCallId={toolCallId}
        toolName={toolName}
        input={input}
        opened={editing}
        onClose={editor.close}
      />
      <Dialog value={asking} onClose={() => setAsking(null)} title={(kind) => `${WORDED[kind].title} ${toolName}`}>
        {(kind) => (
          <form onSubmit={form.handleSubmit((values) => worded.mutate({ kind, words: values.words }))} noValidate>
            <Stack>
              <Textarea
                label={WORDED[kind].label}
                autosize
                minRows={3}
                data-autofocus
                {...form.register('words')}
                error={form.formState.errors.words?.message}
              />
              <FormError title={`Not ${WORDED[kind].done.toLowerCase()}`} error={worded.error} />
              <Group justify="flex-end">
                <Button variant="default" onClick={() => setAsking(null)}>
                  Cancel
                </Button>
                <Button type="submit" color={WORDED[kind].color} loading={worded.isPending}>
                  {WORDED[kind].title}
                </Button>
              </Group>
            </Stack>
          </form>
        )}
      </Dialog>
    </>
  );
}
