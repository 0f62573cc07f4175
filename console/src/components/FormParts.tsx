import { Alert, Button, Group, Switch, Text } from '@mantine/core';
import type { ReactNode } from 'react';
import { type Control, Controller, type FieldPathByValue, type FieldValues } from 'react-hook-form';

/** A form's submit button, at its end. */
export function SubmitRow({ label, busy }: { label: ReactNode; busy: boolean }) {
  return (
    <Group justify="flex-end">
      <Button type="submit" loading={busy}>
        {label}
      </Button>
    </Group>
  );
}

/** What a list says when it has nothing to show. */
export function EmptyState({ children }: { children: ReactNode }) {
  return (
    <Text c="dimmed" ta="center" py="lg">
      {children}
    </Text>
  );
}

/** Why the server refused a form, announced to screen readers; nothing when it did not. */
export function FormError({ error }: { error: Error | null }) {
  if (!error) return null;
  return (
    <Alert color="red" role="alert">
      {error.message}
    </Alert>
  );
}

/** A form's on/off field (react-hook-form), as a switch with its label and what it does. */
export function SwitchField<Values extends FieldValues>(props: {
  control: Control<Values>;
  name: FieldPathByValue<Values, boolean>;
  label: string;
  description?: string;
}) {
  return (
    <Controller
      control={props.control}
      name={props.name}
      render={({ field }) => (
        <Switch
          label={props.label}
          description={props.description}
          checked={field.value}
          onChange={(event) => field.onChange(event.currentTarget.checked)}
        />
      )}
    />
  );
}
