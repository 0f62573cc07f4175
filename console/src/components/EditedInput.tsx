import { Stack, Text } from '@mantine/core';
import { JsonBlock } from './JsonBlock';

/** A call a person approved with other arguments: what the model proposed, what ran, and which fields changed. */
export function EditedInput({ toolName, proposed, approved }: { toolName: string; proposed: unknown; approved: unknown }) {
  const before = (proposed ?? {}) as Record<string, unknown>;
  const after = (approved ?? {}) as Record<string, unknown>;
  const changed = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter(
    (key) => JSON.stringify(before[key]) !== JSON.stringify(after[key]),
  );
  return (
    <Stack gap={4} aria-label={`Edited input of ${toolName}`} role="group">
      <Text size="xs" fw={600}>
        Edited by an approver
      </Text>
      {changed.map((key) => (
        <Text key={key} size="xs" ff="monospace">
          {key}: {JSON.stringify(before[key])} → {JSON.stringify(after[key])}
        </Text>
      ))}
      <JsonBlock value={approved} maxHeight={160} label={`Approved input of ${toolName}`} wrap />
    </Stack>
  );
}

/** A call's arguments as a reviewer reads them: the model's, or an approver's edit shown against them. */
export function CallInput(props: { toolName: string; input: unknown; approvedInput: unknown; maxHeight: number }) {
  const { toolName, input, approvedInput } = props;
  return approvedInput === null || approvedInput === undefined ? (
    <JsonBlock value={input} maxHeight={props.maxHeight} label={`Input of ${toolName}`} wrap />
  ) : (
    <EditedInput toolName={toolName} proposed={input} approved={approvedInput} />
  );
}

/** The arguments a reviewer may edit or send back: none for a run over its budget (it only asks to go on). */
export const editableInput = (call: { modeSource?: unknown; input: unknown; approvedInput?: unknown }) =>
  (call.modeSource as { source?: string } | null)?.source === 'budget' ? undefined : (call.approvedInput ?? call.input);
