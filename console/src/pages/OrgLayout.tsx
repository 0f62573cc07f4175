import { Alert, Badge } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Outlet } from '@tanstack/react-router';
import { createContext, useContext } from 'react';
import { type LiveState, useOrgEvents } from '../lib/live';
import { useOrgSlug } from '../lib/org';
import { meQuery } from '../lib/queries';

const LiveStateContext = createContext<LiveState | undefined>(undefined);

function LiveUpdates({ org }: { org: string }) {
  const state = useOrgEvents(org);
  return (
    <LiveStateContext.Provider value={state}>
      <Outlet />
    </LiveStateContext.Provider>
  );
}

/** An organization's pages; for an Admin they stay current from the org's event stream. */
export function OrgLayout() {
  const org = useOrgSlug();
  const { data: me } = useQuery(meQuery);
  return me?.role === 'Admin' ? <LiveUpdates org={org} /> : <Outlet />;
}

/** "Live" once the event stream is open; pages put it beside their title. */
export function LiveBadge() {
  const state = useContext(LiveStateContext);
  if (!state) return null;
  return (
    <Badge variant="dot" color={state === 'live' ? 'green' : 'gray'} data-live-state={state}>
      {state === 'live' ? 'Live' : state === 'connecting' ? 'Connecting' : 'Reconnecting'}
    </Badge>
  );
}

/** The admin pages' gate: a Guest sees why, not a failed request. */
export function AdminOnly() {
  const { data: me } = useQuery(meQuery);
  if (me && me.role !== 'Admin') {
    return (
      <Alert color="yellow" title="Administrators only">
        This page is for the organization's administrators.
      </Alert>
    );
  }
  return <Outlet />;
}
