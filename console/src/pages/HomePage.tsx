import { Center, Stack, Text, Title } from '@mantine/core';

/** Shown when the operator belongs to no organization yet (with one, / leads to its first page). */
export function HomePage() {
  return (
    <Center mih={300}>
      <Stack align="center" gap="xs">
        <Title order={2}>No organization yet</Title>
        <Text c="dimmed">
          Ask an administrator to add you to one, or run <code>npm run cli -- orgs add-member --org SLUG --email YOU</code>.
        </Text>
      </Stack>
    </Center>
  );
}
