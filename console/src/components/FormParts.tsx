import { Alert, Button, Group, Text } from '@mantine/core';
import type { ReactNode } from 'react';

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
