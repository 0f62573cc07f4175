import { queryOptions } from '@tanstack/react-query';
import { api, unwrap } from '../api/client';

/** Query keys and fetchers shared by pages and the live stream (which invalidates them by prefix). */
export const keys = {
  me: ['me'] as const,
  orgs: ['orgs'] as const,
  org: (org: string) => ['org', org] as const,
  ledger: (org: string) => ['org', org, 'ledger'] as const,
  ledgerRow: (org: string, id: string) => ['org', org, 'ledger-row', id] as const,
  approvals: (org: string) => ['org', org, 'approvals'] as const,
};

export const meQuery = queryOptions({
  queryKey: keys.me,
  queryFn: () => unwrap(api.GET('/auth/me')),
  staleTime: 60_000,
});

export const orgsQuery = queryOptions({
  queryKey: keys.orgs,
  queryFn: () => unwrap(api.GET('/orgs')).then((body) => body.organizations),
  staleTime: 60_000,
});

export const orgQuery = (org: string) =>
  queryOptions({
    queryKey: keys.org(org),
    queryFn: () => unwrap(api.GET('/orgs/{org}', { params: { path: { org } } })),
    staleTime: 60_000,
  });

export const pendingApprovalsQuery = (org: string) =>
  queryOptions({
    queryKey: keys.approvals(org),
    queryFn: () => unwrap(api.GET('/orgs/{org}/approvals', { params: { path: { org }, query: { status: 'pending', limit: 200 } } })),
  });

export const membersQuery = (org: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'members'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/members', { params: { path: { org } } })).then((body) => body.members),
    staleTime: 60_000,
  });
