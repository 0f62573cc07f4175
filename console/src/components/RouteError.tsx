import { ButtonLink } from './links';
import { Alert, Button, Center, Stack, Text, Title } from '@mantine/core';
import type { ErrorComponentProps } from '@tanstack/react-router';
import { isNotFound } from '../api/client';

export function NotFound() {
  return (
    <Center mih={300}>
      <Stack align="center" gap="xs">
        <Title order={2}>Not found</Title>
        <Text c="dimmed">This page does not exist, or it belongs to an organization you are not a member of.</Text>
        <ButtonLink to="/" variant="light">
          Go to the start page
        </ButtonLink>
      </Stack>
    </Center>
  );
}

/** A route's load failed: "not found" for a 404 (another org's id in the URL), else the server's message. */
export function RouteError({ error, reset }: ErrorComponentProps) {
  if (isNotFound(error)) return <NotFound />;

  return (
    <Alert color="red" title="Something went wrong" m="md">
      <Stack gap="xs" align="flex-start">
        <Text size="sm">{(error as Error).message}</Text>
        <Button size="xs" variant="light" onClick={reset}>
          Try again
        </Button>
      </Stack>
    </Alert>
  );
}

/** A query's failure inside a page: "not found" for 404, else the message. */
export function QueryError({ error }: { error: Error }) {
  if (isNotFound(error)) return <NotFound />;
  return (
    <Alert color="red" title="Could not load this">
      {error.message}
    </Alert>
  );
}
