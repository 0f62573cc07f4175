import { Alert, Button, Group, Switch, Text } from '@mantine/core';
import { type ReactNode, useEffect, useRef } from 'react';
import { type Control, Controller, type FieldPathByValue, type FieldValues } from 'react-hook-form';

/** A form that says the server's last refusal by its buttons (a form in a dialog, where a notification would cover its top). */
export interface Refusable {
  /** The refusal, as a FormError. */
  refusal?: ReactNode;
}

/** A form's submit button, at its end, after why the server refused it last. */
export function SubmitRow({ label, busy, refusal }: { label: ReactNode; busy: boolean } & Refusable) {
  return (
    <>
      {refusal}
      <Group justify="flex-end">
        <Button type="submit" loading={busy}>
          {label}
        </Button>
      </Group>
    </>
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

/**
 * Why the server refused a form, announced to screen readers; nothing when it did not. A form in a dialog
 * says it here, by its buttons, rather than in a notification, which would cover the dialog's top.
 */
export function FormError({ error, title }: { error: Error | null; title?: string }) {
  const alert = useRef<HTMLDivElement>(null);
  // Shown, it pushes what follows it (a dialog's buttons) down: both are brought into view, it first, so
  // that scrolling on to what follows leaves it in view above.
  useEffect(() => {
    const shown = alert.current;
    if (error && shown) for (const element of [shown, shown.nextElementSibling]) element?.scrollIntoView({ block: 'nearest' });
  }, [error]);
  if (!error) return null;
  return (
    <Alert ref={alert} color="red" role="alert" title={title}>
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
