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
    queryFn: () =>
      unwrap(api.GET('/orgs/{org}/approvals', { params: { path: { org }, query: { status: 'pending', limit: 200 } } })),
  });

export const membersQuery = (org: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'members'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/members', { params: { path: { org } } })).then((body) => body.members),
    staleTime: 60_000,
  });

export const webhooksQuery = (org: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'webhooks'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/webhooks', { params: { path: { org } } })).then((body) => body.webhooks),
  });

export const agentsQuery = (org: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'agents'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/agents', { params: { path: { org } } })).then((body) => body.agents),
  });

export const rulesQuery = (org: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'action-rules'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/action-rules', { params: { path: { org } } })).then((body) => body.actionRules),
  });

export const toolsQuery = (org: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'tools'],
    queryFn: () => unwrap(api.GET('/orgs/{org}/tools', { params: { path: { org } } })).then((body) => body.tools),
    staleTime: Infinity,
  });

export const agentQuery = (org: string, agentId: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'agents', agentId],
    queryFn: () => unwrap(api.GET('/orgs/{org}/agents/{agentId}', { params: { path: { org, agentId } } })),
  });

export const versionsQuery = (org: string, agentId: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'agents', agentId, 'versions'],
    queryFn: () =>
      unwrap(
        api.GET('/orgs/{org}/agents/{agentId}/versions', { params: { path: { org, agentId }, query: { limit: 200 } } }),
      ).then((body) => body.versions),
  });

export const experimentsQuery = (org: string, agentId: string) =>
  queryOptions({
    queryKey: [...keys.org(org), 'experiments', agentId],
    queryFn: () =>
      unwrap(api.GET('/orgs/{org}/experiments', { params: { path: { org }, query: { agentId, limit: 50 } } })).then(
        (body) => body.experiments,
      ),
  });
