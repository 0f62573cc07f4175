import { useMutation } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { Dialog } from '../../components/Dialog';
import { FormError } from '../../components/FormParts';
import { emptyRule, RuleForm, type RuleValues, toRuleBody } from './RuleForm';

/** A rule the dialog changes: its id, and what the form starts from. */
export interface EditedRule {
  id: string;
  initial: RuleValues;
}

/** What the dialog is open on: a rule to change, or none (a new one). */
export interface RuleEditing {
  rule?: EditedRule;
}

/**
 * The dialog that makes an action rule, or changes one. Each opening has a form of its own, so a
 * refusal it shows is of what it holds and closes with it.
 */
export function RuleDialog(props: {
  org: string;
  /** Null: closed. */
  editing: RuleEditing | null;
  onClose: () => void;
  /** After a save (the dialog is closed by then, or was before). */
  onSaved: (message: string) => void;
}) {
  return (
    <Dialog
      value={props.editing}
      onClose={props.onClose}
      title={({ rule }) => (rule ? 'Edit action rule' : 'New action rule')}
      size="xl"
    >
      {({ rule }, close) => <RuleEditor org={props.org} rule={rule} onClose={close} onSaved={props.onSaved} />}
    </Dialog>
  );
}

function RuleEditor(props: { org: string; rule?: EditedRule; onClose: () => void; onSaved: (message: string) => void }) {
  const { org, rule } = props;
  const save = useMutation({
    mutationFn: (values: RuleValues) =>
      rule
        ? unwrap(
            api.PATCH('/orgs/{org}/action-rules/{ruleId}', {
              params: { path: { org, ruleId: rule.id } },
              body: toRuleBody(values),
            }),
          )
        : unwrap(api.POST('/orgs/{org}/action-rules', { params: { path: { org } }, body: toRuleBody(values) })),
    // Told even when the dialog was closed before the save ended; closed by it only while open (below).
    onSuccess: () => props.onSaved('Rule saved'),
  });
  return (
    <RuleForm
      org={org}
      initial={rule?.initial ?? emptyRule}
      submitLabel="Save rule"
      busy={save.isPending}
      onSubmit={(values) => save.mutate(values, { onSuccess: props.onClose })}
      refusal={<FormError title="Rule not saved" error={save.error} />}
    />
  );
}
