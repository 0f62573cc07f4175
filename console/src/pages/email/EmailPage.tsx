import { Stack, Tabs, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { clearRefusals } from '../../lib/notices';
import { useOrgSlug } from '../../lib/org';
import { meQuery } from '../../lib/queries';
import { EmailIntegration } from './EmailIntegration';
import { EmailThreads } from './EmailThreads';
import { Inboxes } from './Inboxes';
import { Suppressions } from './Suppressions';

/** Email (spec 4.3): threads for every member; inboxes, the integration and removals for Admins. */
export function EmailPage() {
  const org = useOrgSlug();
  const { data: me } = useQuery(meQuery);
  const isAdmin = me?.role === 'Admin';
  return (
    <Stack>
      <Title order={1} size="h2">
        Email
      </Title>
      <Tabs defaultValue="threads" keepMounted={false} onChange={clearRefusals}>
        <Tabs.List>
          <Tabs.Tab value="threads">Threads</Tabs.Tab>
          {isAdmin && <Tabs.Tab value="inboxes">Inboxes</Tabs.Tab>}
          {isAdmin && <Tabs.Tab value="integration">Integration</Tabs.Tab>}
          <Tabs.Tab value="suppressions">Suppressions</Tabs.Tab>
        </Tabs.List>
        <Tabs.Panel value="threads" pt="md">
          <EmailThreads org={org} />
        </Tabs.Panel>
        {isAdmin && (
          <Tabs.Panel value="inboxes" pt="md">
            <Inboxes org={org} />
          </Tabs.Panel>
        )}
        {isAdmin && (
          <Tabs.Panel value="integration" pt="md">
            <EmailIntegration org={org} />
          </Tabs.Panel>
        )}
        <Tabs.Panel value="suppressions" pt="md">
          <Suppressions org={org} canRemove={isAdmin} />
        </Tabs.Panel>
      </Tabs>
    </Stack>
  );
}
