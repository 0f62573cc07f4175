import { Card, Switch } from '@mantine/core';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../../api/client';
import { meQuery } from '../../lib/queries';
import { pageNotices } from '../../lib/notices';

/** The operator's own choice: approval emails for rules that notify by email, or the console only. */
export function ApprovalEmailsSwitch({ enabled }: { enabled: boolean }) {
  const queryClient = useQueryClient();
  // Optimistic: the switch moves in the click's own render, and back if saving fails.
  const [moving, setMoving] = useState<boolean | null>(null);
  const { failed, succeeded } = pageNotices('approval-emails');
  const update = useMutation({
    mutationFn: (approvalEmails: boolean) => unwrap(api.PATCH('/auth/me/preferences', { body: { approvalEmails } })),
    onSuccess: (preferences) => {
      succeeded();
      queryClient.setQueryData(meQuery.queryKey, (me) => (me ? { ...me, preferences } : me));
    },
    onError: failed('Not saved'),
    onSettled: () => setMoving(null),
  });
  return (
    <Card withBorder>
      <Switch
        label="Approval emails"
        description={
          'When a rule notifies by email, send me its approval requests (with Approve and Reject links). ' +
          'Off: I decide in the console.'
        }
        checked={moving ?? enabled}
        onChange={(event) => {
          setMoving(event.currentTarget.checked);
          update.mutate(event.currentTarget.checked);
        }}
      />
    </Card>
  );
}
