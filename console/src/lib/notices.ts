import { notifications } from '@mantine/notifications';

/** The refusals shown and not yet taken away, by id. */
const standing = new Set<string>();

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
      notifications.show({
        id,
        color: 'red',
        title,
        message: error.message,
        autoClose: false,
        onClose: () => standing.delete(id),
      });
      standing.add(id);
    },
    /** A success, said when there is something to say (a list that shows the change says it itself). */
    succeeded: (message?: string, color: 'green' | 'gray' = 'green') => {
      notifications.hide(id);
      standing.delete(id);
      if (message) notifications.show({ color, message });
    },
  };
}

/** Takes every refusal away: called when the operator goes to another page, where they would say nothing of what is shown. */
export function clearRefusals(): void {
  for (const id of standing) notifications.hide(id);
  standing.clear();
}

/** One waiting call's decisions, from its buttons or its editor: a refusal stays until that call is decided. */
export const approvalNotices = (toolCallId: string) => pageNotices(`approval-${toolCallId}`);
