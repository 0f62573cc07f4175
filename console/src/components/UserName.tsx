import { Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { membersQuery } from '../lib/queries';

/** A user of the org by email (the API gives ids); the id itself for someone no longer a member. */
export function UserName({ org, userId }: { org: string; userId: string | null | undefined }) {
  const { data: members } = useQuery(membersQuery(org));
  if (!userId) return <>—</>;
  const member = members?.find((candidate) => candidate.id === userId);
  return member ? (
    member.email
  ) : (
    <Text span size="xs" ff="monospace">
      {userId}
    </Text>
  );
}
