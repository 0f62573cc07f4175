import { Checkbox, NumberInput, Stack, Textarea, TextInput } from '@mantine/core';

type Property = { type?: unknown; description?: unknown };
type FlatSchema = { properties: Record<string, Property>; required: string[] };

/** A tool's input schema when a form of one field per argument can edit it: an object of strings, numbers and booleans. */
export function flatSchema(schema: unknown): FlatSchema | undefined {
  const object = schema as { type?: unknown; properties?: unknown; required?: unknown } | undefined;
  if (object?.type !== 'object' || typeof object.properties !== 'object' || object.properties === null) return undefined;
  const properties = object.properties as Record<string, Property>;
  const flat = Object.values(properties).every((property) =>
    ['string', 'number', 'integer', 'boolean'].includes(String(property?.type)),
  );
  if (!flat || Object.keys(properties).length === 0) return undefined;
  return { properties, required: Array.isArray(object.required) ? object.required.map(String) : [] };
}

/** The arguments the fields say: an empty optional field is left out; a required one is sent as is, for the server to judge. */
export function argumentsOf(schema: FlatSchema, values: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(values).filter(([name, value]) => schema.required.includes(name) || (value !== '' && value !== undefined)),
  );
}

/** One field per argument, filled with the model's, typed as the tool's schema says. */
export function ArgumentFields(props: {
  schema: FlatSchema;
  /** The model's arguments: a long or multi-line one gets a text area (chosen once, not as the person types). */
  initial: Record<string, unknown>;
  values: Record<string, unknown>;
  onChange: (values: Record<string, unknown>) => void;
}) {
  const set = (name: string, value: unknown) => props.onChange({ ...props.values, [name]: value });
  return (
    <Stack gap="xs">
      {Object.entries(props.schema.properties).map(([name, property]) => {
        const common = {
          label: name,
          description: typeof property.description === 'string' ? property.description : undefined,
          withAsterisk: props.schema.required.includes(name),
        };
        const value = props.values[name];
        if (property.type === 'boolean')
          return (
            <Checkbox
              key={name}
              {...common}
              checked={value === true}
              onChange={(event) => set(name, event.currentTarget.checked)}
            />
          );
        if (property.type === 'number' || property.type === 'integer')
          return (
            <NumberInput
              key={name}
              {...common}
              value={typeof value === 'number' ? value : ''}
              allowDecimal={property.type === 'number'}
              onChange={(next) => set(name, typeof next === 'number' ? next : undefined)}
            />
          );
        const text = typeof value === 'string' ? value : value === undefined ? '' : String(value);
        const given = String(props.initial[name] ?? '');
        return given.includes('\n') || given.length > 80 ? (
          <Textarea
            key={name}
            {...common}
            autosize
            minRows={3}
            maxRows={12}
            value={text}
            onChange={(event) => set(name, event.currentTarget.value)}
          />
        ) : (
          <TextInput key={name} {...common} value={text} onChange={(event) => set(name, event.currentTarget.value)} />
        );
      })}
    </Stack>
  );
}
