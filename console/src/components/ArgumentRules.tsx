import { ActionIcon, Button, Group, SegmentedControl, Select, Stack, Text, TextInput } from '@mantine/core';
import { type Control, Controller, type UseFormRegister, useFieldArray, useWatch } from 'react-hook-form';
import { z } from 'zod';
import { describeArgumentRule } from '../lib/format';

export const ARGUMENT_OPS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'matches', 'exists'] as const;
/** What each operator's value looks like, as the value field's placeholder. */
const VALUE_EXAMPLES: Record<(typeof ARGUMENT_OPS)[number], string> = {
  eq: '"EUR"',
  ne: '"EUR"',
  gt: '100',
  gte: '100',
  lt: '100',
  lte: '100',
  in: '["a","b"]',
  matches: '^refund',
  exists: 'none, or false',
};

/** An argument rule as the form holds it: its value as the text typed (JSON, or a bare word as a string). */
export const argumentRuleField = z.object({
  tool: z.string().min(1, 'Choose the tool'),
  path: z.string().regex(/^(\/([^~/]|~[01])*)*$/, 'A JSON Pointer, such as /amount'),
  op: z.enum(ARGUMENT_OPS),
  value: z.string().max(10_000),
  mode: z.enum(['ask', 'deny']),
});
export type ArgumentRuleField = z.infer<typeof argumentRuleField>;
type ArgumentRule = Omit<ArgumentRuleField, 'value'> & { value?: unknown };
/** A rule's field errors, as the form reports them. */
type RuleErrors = Partial<Record<keyof ArgumentRuleField, { message?: string }>> | undefined;

/**
 * The text typed as the API's value: JSON when it parses (100, "x", ["a","b"], true), else the text
 * itself; nothing for an empty `exists`.
 */
export function ruleValue(rule: ArgumentRuleField): ArgumentRule {
  const { value, ...rest } = rule;
  if (value.trim() === '') return rest;
  try {
    return { ...rest, value: JSON.parse(value) };
  } catch {
    return { ...rest, value };
  }
}

export const ruleField = (rule: ArgumentRule): ArgumentRuleField => ({
  ...rule,
  value:
    rule.value === undefined
      ? ''
      : typeof rule.value === 'string' && rule.op === 'matches'
        ? rule.value
        : JSON.stringify(rule.value),
});

type WithArgumentRules = { argumentRules: ArgumentRuleField[] };

/**
 * The argument rules of a rule or an inbox's assignment: each makes matching calls of a tool wait for a
 * human (ask) or refused (deny).
 */
export function ArgumentRules<T extends WithArgumentRules>(props: {
  control: Control<T>;
  register: UseFormRegister<T>;
  tools: string[];
  errors?: RuleErrors[];
}) {
  // The generic form narrows to the one field this edits.
  const control = props.control as unknown as Control<WithArgumentRules>;
  const register = props.register as unknown as UseFormRegister<WithArgumentRules>;
  const { fields, append, remove } = useFieldArray({ control, name: 'argumentRules' });
  return (
    <Stack gap={4}>
      <Text size="sm" fw={500}>
        Argument rules
      </Text>
      <Text size="xs" c="dimmed">
        A call whose arguments match is at least this strict (deny &gt; ask &gt; agent &gt; allow): for instance refund_order,
        /amount, gt, 100, ask. Values are JSON (100, "EUR", ["a","b"]); matches takes a regular expression; exists takes none, or
        false for a path that must be absent.
      </Text>
      {fields.map((field, index) => (
        <ArgumentRuleRow
          key={field.id}
          index={index}
          control={control}
          register={register}
          tools={props.tools}
          errors={props.errors?.[index]}
          onRemove={() => remove(index)}
        />
      ))}
      <Group>
        <Button
          size="compact-sm"
          variant="light"
          onClick={() => append({ tool: '', path: '/', op: 'gt', value: '', mode: 'ask' })}
        >
          Add argument rule
        </Button>
      </Group>
    </Stack>
  );
}

/** One argument rule's fields, in a row: the tool, the JSON Pointer, the operator, the value, the mode. */
function ArgumentRuleRow({
  index,
  control,
  register,
  tools,
  errors,
  onRemove,
}: {
  index: number;
  control: Control<WithArgumentRules>;
  register: UseFormRegister<WithArgumentRules>;
  tools: string[];
  errors: RuleErrors;
  onRemove: () => void;
}) {
  const op = useWatch({ control, name: `argumentRules.${index}.op` });
  return (
    <Group gap="xs" align="flex-start" wrap="nowrap" aria-label={`Argument rule ${index + 1}`} role="group">
      <Controller
        control={control}
        name={`argumentRules.${index}.tool`}
        render={({ field: tool }) => (
          <Select
            aria-label="Tool"
            placeholder="Tool"
            data={tools}
            value={tool.value || null}
            onChange={(value) => tool.onChange(value ?? '')}
            error={errors?.tool?.message}
            w={200}
            searchable
          />
        )}
      />
      <TextInput
        aria-label="Path"
        placeholder="/amount"
        {...register(`argumentRules.${index}.path`)}
        error={errors?.path?.message}
        w={120}
      />
      <Controller
        control={control}
        name={`argumentRules.${index}.op`}
        render={({ field: op }) => (
          <Select
            aria-label="Operator"
            data={[...ARGUMENT_OPS]}
            value={op.value}
            onChange={(value) => op.onChange(value ?? 'eq')}
            w={100}
          />
        )}
      />
      <TextInput
        aria-label="Value"
        placeholder={VALUE_EXAMPLES[op]}
        {...register(`argumentRules.${index}.value`)}
        error={errors?.value?.message}
        w={140}
      />
      <Controller
        control={control}
        name={`argumentRules.${index}.mode`}
        render={({ field: mode }) => (
          <SegmentedControl size="xs" aria-label="Mode" data={['ask', 'deny']} value={mode.value} onChange={mode.onChange} />
        )}
      />
      <ActionIcon variant="subtle" color="red" aria-label={`Remove argument rule ${index + 1}`} onClick={onRemove} mt={4}>
        ✕
      </ActionIcon>
    </Group>
  );
}

/** Saved argument rules, numbered as the ledger and the refusals cite them. */
export function ArgumentRuleList({ rules }: { rules: ArgumentRule[] }) {
  return rules.map((test, index) => (
    // biome-ignore lint/suspicious/noArrayIndexKey: numbered by position, as the ledger cites them
    <Text key={index} size="xs" c="dimmed" ff="monospace">
      {index + 1}. {test.tool}: {describeArgumentRule(test)}
    </Text>
  ));
}
