import { MAX_DECISION_REASON_CHARS } from '../approvals.service.ts';
import { clipped } from './slack-blocks.ts';
import type { Block } from './slack-client.ts';

/** What a modal decides: the call, and the message it came from (to update it once decided). */
export interface ModalMetadata {
  a: string;
  t: string;
  kind: 'reject' | 'send_back' | 'edit';
}

type FieldType = 'string' | 'number' | 'integer' | 'boolean';
/** A flat input schema: one field per argument (strings, numbers, booleans); anything else is edited as JSON. */
export type FlatSchema = Array<{ name: string; type: FieldType; required: boolean }>;

export function flatSchemaOf(schema: Record<string, unknown> | undefined): FlatSchema | undefined {
  const properties = schema?.properties as Record<string, { type?: unknown }> | undefined;
  if (schema?.type !== 'object' || !properties) return undefined;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const fields = Object.entries(properties).map(([name, property]) => ({
    name,
    type: property.type as FieldType,
    required: required.has(name),
  }));
  const flat = fields.length > 0 && fields.length <= 20;
  return flat && fields.every((field) => ['string', 'number', 'integer', 'boolean'].includes(field.type)) ? fields : undefined;
}

const text = (value: string, max = 24) => ({ type: 'plain_text', text: clipped(value, max) });
const input = (blockId: string, label: string, element: Record<string, unknown>, optional = false) => ({
  type: 'input',
  block_id: blockId,
  label: { type: 'plain_text', text: label.slice(0, 2000) },
  optional,
  element: { type: 'plain_text_input', action_id: 'value', ...element },
});

/** A modal; one without a submit button (`submit` null) can only be closed. */
function modal(metadata: ModalMetadata, title: string, submit: string | null, blocks: Block[]): Block {
  return {
    type: 'modal',
    callback_id: metadata.kind,
    private_metadata: JSON.stringify(metadata),
    title: text(title),
    ...(submit && { submit: text(submit) }),
    close: text(submit ? 'Cancel' : 'Close'),
    blocks,
  };
}

/** Reject (a reason, optional) or send back (what the agent should do instead, required). */
export function wordsModal(metadata: ModalMetadata, toolName: string): Block {
  const rejecting = metadata.kind === 'reject';
  return modal(metadata, rejecting ? 'Reject' : 'Send back', rejecting ? 'Reject' : 'Send back', [
    { type: 'section', text: { type: 'mrkdwn', text: `*${toolName.replace(/[&<>]/g, '')}*` } },
    input(
      'words',
      rejecting ? 'Reason' : 'What the agent should do instead',
      { multiline: true, max_length: MAX_DECISION_REASON_CHARS, ...(rejecting ? {} : { min_length: 1 }) },
      rejecting,
    ),
  ]);
}

const shown = (value: unknown) => (typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value));
/** The most a Slack text input holds: a longer value cannot be shown in one whole, so it is not edited there. */
export const SLACK_FIELD_MAX = 3000;
const fitsAField = (value: unknown) => shown(value).length <= SLACK_FIELD_MAX;
const note = (words: string) => ({ type: 'context', elements: [{ type: 'mrkdwn', text: words.slice(0, 3000) }] });
const named = (name: string) => `\`${name.replace(/[&<>`]/g, '')}\``;

/**
 * Edit and approve: one field per argument of a flat schema, filled with what an approval approves now; JSON otherwise.
 * A value too long for a Slack field, and an argument the schema does not name, are kept as they are
 * (a value cut to fit would run cut); arguments too long as JSON can only be approved as they are here.
 */
export function editModal(metadata: ModalMetadata, toolName: string, args: unknown, schema: FlatSchema | undefined): Block {
  const given = (args ?? {}) as Record<string, unknown>;
  const head = {
    type: 'section',
    text: { type: 'mrkdwn', text: `*${toolName.replace(/[&<>]/g, '')}*: the call runs with these` },
  };
  const why = input('why', 'Why (optional)', { multiline: true, max_length: MAX_DECISION_REASON_CHARS }, true);
  if (!schema) {
    const json = JSON.stringify(given, null, 2);
    if (json.length > SLACK_FIELD_MAX)
      return modal(metadata, 'Edit and approve', null, [
        head,
        note(
          `These arguments are ${json.length.toLocaleString('en-US')} characters of JSON, more than a Slack field holds: ` +
            'edit them in the console, or approve them as they are with Approve.',
        ),
      ]);
    return modal(metadata, 'Edit and approve', 'Approve', [
      head,
      input('arguments', 'Arguments (JSON)', { multiline: true, initial_value: json }),
      why,
    ]);
  }
  const blocks: Block[] = schema.map((field) => {
    const value = shown(given[field.name]);
    if (!fitsAField(given[field.name]))
      return note(
        `${named(field.name)}: ${value.length.toLocaleString('en-US')} characters, more than a Slack field holds: kept as it is`,
      );
    return input(
      `arg:${field.name}`.slice(0, 255),
      `${field.name} (${field.type})`,
      value ? { initial_value: value } : {},
      !field.required,
    );
  });
  const unnamed = Object.keys(given).filter((name) => !schema.some((field) => field.name === name));
  if (unnamed.length > 0) blocks.push(note(`Kept as they are (not in the tool's schema): ${unnamed.map(named).join(', ')}`));
  return modal(metadata, 'Edit and approve', 'Approve', [head, ...blocks, why]);
}

type StateValues = Record<string, Record<string, { value?: string | null }>>;

/**
 * The arguments an edit modal was submitted with, or the field errors to show in it. Fields are read by
 * the schema's types; what the modal did not offer to edit (`current`'s too long or unnamed values) is
 * kept. The approvals service then checks them against the tool's schema and the rules.
 */
export function editedArguments(
  values: StateValues,
  schema: FlatSchema | undefined,
  current: unknown,
): { arguments: Record<string, unknown> } | { errors: Record<string, string> } {
  if (!schema) {
    const raw = values.arguments?.value?.value ?? '';
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
        return { arguments: parsed as Record<string, unknown> };
    } catch {
      // said below
    }
    return { errors: { arguments: 'The arguments are a JSON object: { "name": value, ... }' } };
  }
  const given = (current ?? {}) as Record<string, unknown>;
  const inModal = schema.filter((field) => fitsAField(given[field.name]));
  const args: Record<string, unknown> = Object.fromEntries(
    Object.entries(given).filter(([name]) => !inModal.some((field) => field.name === name)),
  );
  const errors: Record<string, string> = {};
  for (const field of inModal) {
    const raw = values[`arg:${field.name}`]?.value?.value ?? '';
    if (raw === '') continue;
    if (field.type === 'string') args[field.name] = raw;
    else if (field.type === 'boolean') {
      if (raw !== 'true' && raw !== 'false') errors[`arg:${field.name}`] = 'true or false';
      else args[field.name] = raw === 'true';
    } else {
      const number = Number(raw);
      if (!Number.isFinite(number) || (field.type === 'integer' && !Number.isInteger(number)))
        errors[`arg:${field.name}`] = field.type === 'integer' ? 'a whole number' : 'a number';
      else args[field.name] = number;
    }
  }
  return Object.keys(errors).length > 0 ? { errors } : { arguments: args };
}
