import { useMutation } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { Dialog } from '../../components/Dialog';
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

/** What the dialog's save calls back with, beside closing it. */
interface AssignmentSaved {
  /** After a save (the dialog is closed by then, or was before). */
  onSaved: () => void;
  /** After the attempt, saved or not (the inbox's assignments may have changed either way). */
  onSettled: () => void;
}

/**
 * The dialog that assigns an agent to an inbox, or changes how it is assigned. Each opening has a
 * form of its own, so a refusal it shows is of what it holds and closes with it.
 */
export function AssignmentDialog(
  props: {
    org: string;
    /** Null: closed. */
    editing: EditedAssignment | null;
    onClose: () => void;
  } & AssignmentSaved,
) {
  const { editing, ...rest } = props;
  return (
    <Dialog value={editing} onClose={props.onClose} title={(shown) => shown.title} size="xl">
      {(shown, close) => <AssignmentEditor {...rest} editing={shown} onClose={close} />}
    </Dialog>
  );
}

function AssignmentEditor(props: { org: string; editing: EditedAssignment; onClose: () => void } & AssignmentSaved) {
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
    <AssignmentForm
      org={org}
      agentId={editing.agentId}
      initial={editing.initial}
      submitLabel="Save assignment"
      busy={save.isPending}
      onSubmit={(values) => save.mutate(values, { onSuccess: props.onClose })}
      refusal={<FormError title="Assignment not saved" error={save.error} />}
    />
  );
}
