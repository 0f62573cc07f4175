import { useMutation } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { Dialog } from '../../components/Dialog';
import { FormError } from '../../components/FormParts';
import { AgentForm, type AgentValues, emptyAgent, toAgentBody, toDraftBody } from './AgentForm';

/** An agent the dialog changes: its id, its name for the title, and what the form starts from. */
export interface EditedAgent {
  id: string;
  name: string;
  initial: AgentValues;
}

/** What the dialog is open on: an agent to change, or none (a new one). */
export interface AgentEditing {
  agent?: EditedAgent;
}

/**
 * The dialog that makes an agent, or changes one: published at once, or saved as a draft. Each
 * opening has a form of its own, so a refusal it shows is of what it holds and closes with it.
 */
export function AgentDialog(props: {
  org: string;
  /** Null: closed. */
  editing: AgentEditing | null;
  onClose: () => void;
  /** After a save, with what to tell the operator (the dialog is closed by then, or was before). */
  onSaved: (message: string) => void;
}) {
  return (
    <Dialog
      value={props.editing}
      onClose={props.onClose}
      title={({ agent }) => (agent ? `Edit ${agent.name}` : 'New agent')}
      size="lg"
    >
      {({ agent }, close) => <AgentEditor org={props.org} agent={agent} onClose={close} onSaved={props.onSaved} />}
    </Dialog>
  );
}

function AgentEditor(props: { org: string; agent?: EditedAgent; onClose: () => void; onSaved: (message: string) => void }) {
  const { org, agent } = props;
  // The operator is told of a save even when they closed the dialog before it ended; the dialog is
  // closed by a save only while it is open (a callback of `mutate`), not another opened since.
  const closeOnSuccess = { onSuccess: props.onClose };
  // Each attempt takes the other's refusal away: the dialog says why its last attempt was refused.
  const publish = useMutation({
    mutationFn: (values: AgentValues) =>
      agent
        ? unwrap(
            api.PATCH('/orgs/{org}/agents/{agentId}', {
              params: { path: { org, agentId: agent.id } },
              body: toAgentBody(values),
            }),
          )
        : unwrap(api.POST('/orgs/{org}/agents', { params: { path: { org } }, body: toAgentBody(values) })),
    onMutate: () => {
      draft.reset();
    },
    onSuccess: (updated) => props.onSaved(agent ? `Saved; version ${updated.liveVersion} is live` : 'Agent saved'),
  });
  const draft = useMutation({
    mutationFn: ({ agentId, values }: { agentId: string; values: AgentValues }) =>
      unwrap(
        api.POST('/orgs/{org}/agents/{agentId}/versions', { params: { path: { org, agentId } }, body: toDraftBody(values) }),
      ),
    onMutate: () => {
      publish.reset();
    },
    onSuccess: ({ version }) => props.onSaved(`Saved as draft: version ${version.version}, not live`),
  });
  return (
    <AgentForm
      org={org}
      initial={agent?.initial ?? emptyAgent}
      submitLabel={agent ? 'Save and publish' : 'Save agent'}
      busy={publish.isPending || draft.isPending}
      onSubmit={(values) => publish.mutate(values, closeOnSuccess)}
      onDraft={agent && ((values) => draft.mutate({ agentId: agent.id, values }, closeOnSuccess))}
      refusal={<FormError title={draft.error ? 'Draft not saved' : 'Agent not saved'} error={publish.error ?? draft.error} />}
    />
  );
}
