import { Modal } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { FormError } from '../../components/FormParts';
import { AssignmentForm, type AssignmentValues, toAssignmentBody } from './AssignmentForm';

/** An assignment being made or changed: the inbox, the agent, whether it is assigned already, the form's values. */
export interface EditedAssignment {
  inboxId: string;
  title: string;
  agentId: string;
  assigned: boolean;
  initial: AssignmentValues;
}

/**
 * The dialog that assigns an agent to an inbox, or changes how it is assigned. The page mounts it only
 * while it is open, so a refusal it shows is of what it holds and closes with it.
 */
export function AssignmentDialog(props: {
  org: string;
  editing: EditedAssignment;
  onClose: () => void;
  /** After a save (the dialog is closed by then, or was before). */
  onSaved: () => void;
  /** After the attempt, saved or not (the inbox's assignments may have changed either way). */
  onSettled: () => void;
}) {
  const { org, editing } = props;
  const save = useMutation({
    mutationFn: (values: AssignmentValues) => {
      const path = { org, inboxId: editing.inboxId };
      const body = toAssignmentBody(values);
      return editing.assigned
        ? unwrap(
            api.PATCH('/orgs/{org}/email/inboxes/{inboxId}/agents/{agentId}', {
              params: { path: { ...path, agentId: editing.agentId } },
              body,
            }),
          )
        : unwrap(
            api.POST('/orgs/{org}/email/inboxes/{inboxId}/agents', {
              params: { path },
              body: { agentId: editing.agentId, ...body },
            }),
          );
    },
    // Told even when the dialog was closed before the save ended; closed by it only while open (below).
    onSuccess: props.onSaved,
    onSettled: props.onSettled,
  });
  return (
    <Modal opened onClose={props.onClose} title={editing.title} size="xl">
      <AssignmentForm
        org={org}
        agentId={editing.agentId}
        initial={editing.initial}
        submitLabel="Save assignment"
        busy={save.isPending}
        onSubmit={(values) => save.mutate(values, { onSuccess: props.onClose })}
        refusal={<FormError title="Assignment not saved" error={save.error} />}
      />
    </Modal>
  );
}
