import { NavLinkLink } from './links';
import { AppShell, Badge, Burger, Group, Menu, Select, Text, UnstyledButton } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, Outlet, useNavigate, useParams, useRouterState } from '@tanstack/react-router';
import { api } from '../api/client';
import { meQuery, orgsQuery, pendingApprovalsQuery } from '../lib/queries';

type OrgPage =
  | '/o/$org/ledger'
  | '/o/$org/approvals'
  | '/o/$org/webhooks'
  | '/o/$org/agents'
  | '/o/$org/mcp-servers'
  | '/o/$org/usage'
  | '/o/$org/email'
  | '/o/$org/slack'
  | '/o/$org/documents';
const APPROVALS: { to: OrgPage; label: string } = { to: '/o/$org/approvals', label: 'Approvals' };
const ADMIN_PAGES: { to: OrgPage; label: string }[] = [
  { to: '/o/$org/ledger', label: 'Ledger' },
  APPROVALS,
  { to: '/o/$org/webhooks', label: 'Webhooks' },
  { to: '/o/$org/agents', label: 'Agents' },
  { to: '/o/$org/mcp-servers', label: 'MCP servers' },
  { to: '/o/$org/usage', label: 'Usage' },
  { to: '/o/$org/slack', label: 'Slack' },
];
const MEMBER_PAGES: { to: OrgPage; label: string }[] = [
  { to: '/o/$org/email', label: 'Email' },
  { to: '/o/$org/documents', label: 'Documents' },
];

function PendingCount({ org }: { org: string }) {
  const { data } = useQuery(pendingApprovalsQuery(org));
  const count = data?.approvals.length ?? 0;
  return count > 0 ? (
    <Badge size="sm" color="orange" aria-label={`${count} pending`}>
      {count}
    </Badge>
  ) : null;
}

/** The frame of every signed-in page: organization switcher, navigation, the operator's menu. */
export function Shell() {
  const [opened, { toggle }] = useDisclosure();
  const { data: me } = useQuery(meQuery);
  const { data: orgs = [] } = useQuery(orgsQuery);
  const params = useParams({ strict: false });
  const pathname = useRouterState({ select: (state) => state.location.pathname });
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const org = params.org ?? orgs[0]?.slug;
  const isAdmin = me?.role === 'Admin';
  // A member who is not an admin decides the calls their rules name them for, in the approvals inbox.
  const pages = [...(isAdmin ? ADMIN_PAGES : [APPROVALS]), ...MEMBER_PAGES];

  const signOut = async () => {
    await api.POST('/auth/logout');
    queryClient.clear();
    await navigate({ to: '/sign-in', search: {} });
  };
  // Switching keeps the page kind (ledger stays ledger); a detail page has no match in another org.
  const switchOrg = (slug: string | null) => {
    if (!slug || slug === org) return;
    const section = pathname.split('/')[3];
    const to = pages.find((page) => page.to.endsWith(`/${section}`))?.to ?? pages[0]?.to ?? '/o/$org/documents';
    void navigate({ to, params: { org: slug } });
  };

  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !opened } }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Group gap="sm">
            <Burger opened={opened} onClick={toggle} hiddenFrom="sm" size="sm" aria-label="Toggle navigation" />
            <Text fw={700} component={Link} to="/">
              Agent Platform
            </Text>
            {orgs.length > 0 && (
              <Select
                aria-label="Organization"
                w={220}
                size="xs"
                data={orgs.map((o) => ({ value: o.slug, label: o.name }))}
                value={org ?? null}
                onChange={switchOrg}
                allowDeselect={false}
              />
            )}
          </Group>
          <Menu position="bottom-end" withinPortal>
            <Menu.Target>
              <UnstyledButton>
                <Text size="sm">{me?.email}</Text>
              </UnstyledButton>
            </Menu.Target>
            <Menu.Dropdown>
              <Menu.Label>{me?.role}</Menu.Label>
              <Menu.Item component={Link} to="/me">
                Tool preferences
              </Menu.Item>
              <Menu.Item color="red" onClick={() => void signOut()}>
                Sign out
              </Menu.Item>
            </Menu.Dropdown>
          </Menu>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs" aria-label="Pages">
        {org &&
          pages.map((page) => (
            <NavLinkLink
              key={page.to}
              to={page.to}
              params={{ org }}
              label={page.label}
              active={pathname.startsWith(page.to.replace('$org', org))}
              rightSection={page.to === '/o/$org/approvals' ? <PendingCount org={org} /> : undefined}
            />
          ))}
        <NavLinkLink to="/me" label="Me" active={pathname === '/me'} />
      </AppShell.Navbar>
      <AppShell.Main>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
