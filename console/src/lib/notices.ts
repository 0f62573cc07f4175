import { notifications, notificationsStore } from '@mantine/notifications';

/**
 * A page's outcomes as notifications. A failure stays until the operator closes it, another failure
 * replaces it, a success takes it away, or the operator goes to another page: a red "Draft not saved"
 * no longer stands beside the green "Saved as draft" of the attempt that followed it, and no failure
 * closes before it is read.
 */
export function pageNotices(id: string) {
  return {
    failed: (title: string) => (error: Error) => {
      notifications.hide(id);
      notifications.show({ id, color: 'red', title, message: error.message, autoClose: false });
    },
    /** A success, said when there is something to say (a list that shows the change says it itself). */
    succeeded: (message?: string, color: 'green' | 'gray' = 'green') => {
      notifications.hide(id);
      if (message) notifications.show({ color, message });
    },
  };
}

/**
 * Takes every refusal away: called when the operator goes to another page, where they would say nothing
 * of what is shown. The refusals are the notifications that do not close themselves, shown or queued.
 */
export function clearRefusals(): void {
  const { notifications: shown, queue } = notificationsStore.getState();
  for (const { id, autoClose } of [...shown, ...queue]) if (autoClose === false && id) notifications.hide(id);
}

/** One waiting call's decisions, from its buttons or its editor: a refusal stays until that call is decided. */
export const approvalNotices = (toolCallId: string) => pageNotices(`approval-${toolCallId}`);
