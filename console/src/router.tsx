import type { QueryClient } from '@tanstack/react-query';
import {
  createRootRouteWithContext,
  createRoute,
  createRouter,
  lazyRouteComponent,
  notFound,
  Outlet,
  redirect,
} from '@tanstack/react-router';
import { z } from 'zod';
import { isNotFound, isUnauthorized } from './api/client';
import { Shell } from './components/Shell';
import { NotFound, RouteError } from './components/RouteError';
import { meQuery, orgQuery, orgsQuery } from './lib/queries';
import { HomePage } from './pages/HomePage';
import { ledgerSearchSchema } from './pages/ledger/ledger-search';
import { AdminOnly, OrgLayout } from './pages/OrgLayout';

// Pages load on first visit: the first screen downloads only what it shows.
interface RouterContext {
  queryClient: QueryClient;
}

const rootRoute = createRootRouteWithContext<RouterContext>()({
  component: Outlet,
  notFoundComponent: NotFound,
  errorComponent: RouteError,
});

const signInRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/sign-in',
  validateSearch: z.object({ redirect: z.string().optional() }),
  component: lazyRouteComponent(() => import('./pages/auth/SignInPage'), 'SignInPage'),
});
const forgotPasswordRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/forgot-password',
  component: lazyRouteComponent(() => import('./pages/auth/PasswordPages'), 'ForgotPasswordPage'),
});
const resetPasswordRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/reset-password',
  validateSearch: z.object({ token: z.string().optional() }),
  component: lazyRouteComponent(() => import('./pages/auth/PasswordPages'), 'ResetPasswordPage'),
});

/** Everything behind a session: without one, sign-in, then back to the page asked for. */
const signedInRoute = createRoute({
  getParentRoute: () => rootRoute,
  id: 'signed-in',
  beforeLoad: async ({ context, location }) => {
    try {
      return { me: await context.queryClient.ensureQueryData(meQuery) };
    } catch (error) {
      if (isUnauthorized(error)) throw redirect({ to: '/sign-in', search: { redirect: location.href } });
      throw error;
    }
  },
  component: Shell,
});

const homeRoute = createRoute({
  getParentRoute: () => signedInRoute,
  path: '/',
  beforeLoad: async ({ context }) => {
    const [first] = await context.queryClient.ensureQueryData(orgsQuery);
    const me = await context.queryClient.ensureQueryData(meQuery);
    if (first) throw redirect({ to: me.role === 'Admin' ? '/o/$org/ledger' : '/o/$org/documents', params: { org: first.slug } });
  },
  component: HomePage,
});
const meRoute = createRoute({
  getParentRoute: () => signedInRoute,
  path: '/me',
  component: lazyRouteComponent(() => import('./pages/me/MePage'), 'MePage'),
});

export const orgRoute = createRoute({
  getParentRoute: () => signedInRoute,
  path: '/o/$org',
  // Another org's slug is "not found" (the API answers 404 for orgs one is not a member of).
  loader: ({ context, params }) =>
    context.queryClient.ensureQueryData(orgQuery(params.org)).catch((error: unknown) => {
      throw isNotFound(error) ? notFound() : error;
    }),
  component: OrgLayout,
  notFoundComponent: NotFound,
  errorComponent: RouteError,
});
/** The admin pages: a Guest is told they are for administrators (the API refuses them too). */
const adminRoute = createRoute({ getParentRoute: () => orgRoute, id: 'admin', component: AdminOnly });
export const ledgerRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/ledger',
  validateSearch: ledgerSearchSchema,
  component: lazyRouteComponent(() => import('./pages/ledger/LedgerPage'), 'LedgerPage'),
});
export const ledgerDetailRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/ledger/$id',
  component: lazyRouteComponent(() => import('./pages/ledger/LedgerDetailPage'), 'LedgerDetailPage'),
});
/** Any member: a Guest sees the calls the rules name them to decide (the API says which). */
export const approvalsRoute = createRoute({
  getParentRoute: () => orgRoute,
  path: '/approvals',
  component: lazyRouteComponent(() => import('./pages/approvals/ApprovalsPage'), 'ApprovalsPage'),
});
export const webhooksRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/webhooks',
  component: lazyRouteComponent(() => import('./pages/webhooks/WebhooksPage'), 'WebhooksPage'),
});
export const webhookDetailRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/webhooks/$id',
  component: lazyRouteComponent(() => import('./pages/webhooks/WebhookDetailPage'), 'WebhookDetailPage'),
});
export const agentsRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/agents',
  component: lazyRouteComponent(() => import('./pages/agents/AgentsPage'), 'AgentsPage'),
});
export const agentDetailRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/agents/$id',
  component: lazyRouteComponent(() => import('./pages/agents/AgentDetailPage'), 'AgentDetailPage'),
});
export const experimentRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/experiments/$id',
  component: lazyRouteComponent(() => import('./pages/agents/ExperimentPage'), 'ExperimentPage'),
});
export const mcpServersRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/mcp-servers',
  component: lazyRouteComponent(() => import('./pages/mcp/McpServersPage'), 'McpServersPage'),
});
export const usageRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/usage',
  component: lazyRouteComponent(() => import('./pages/usage/UsagePage'), 'UsagePage'),
});
export const slackRoute = createRoute({
  getParentRoute: () => adminRoute,
  path: '/slack',
  component: lazyRouteComponent(() => import('./pages/slack/SlackPage'), 'SlackPage'),
});
export const emailRoute = createRoute({
  getParentRoute: () => orgRoute,
  path: '/email',
  component: lazyRouteComponent(() => import('./pages/email/EmailPage'), 'EmailPage'),
});
export const emailThreadRoute = createRoute({
  getParentRoute: () => orgRoute,
  path: '/email/threads/$id',
  component: lazyRouteComponent(() => import('./pages/email/EmailThreadPage'), 'EmailThreadPage'),
});
export const documentsRoute = createRoute({
  getParentRoute: () => orgRoute,
  path: '/documents',
  component: lazyRouteComponent(() => import('./pages/documents/DocumentsPage'), 'DocumentsPage'),
});

const routeTree = rootRoute.addChildren([
  signInRoute,
  forgotPasswordRoute,
  resetPasswordRoute,
  signedInRoute.addChildren([
    homeRoute,
    meRoute,
    orgRoute.addChildren([
      adminRoute.addChildren([
        ledgerRoute,
        ledgerDetailRoute,
        webhooksRoute,
        webhookDetailRoute,
        agentsRoute,
        agentDetailRoute,
        experimentRoute,
        usageRoute,
        slackRoute,
        mcpServersRoute,
      ]),
      approvalsRoute,
      emailRoute,
      emailThreadRoute,
      documentsRoute,
    ]),
  ]),
]);

export function createAppRouter(queryClient: QueryClient) {
  return createRouter({
    routeTree,
    context: { queryClient },
    defaultPreload: 'intent',
    defaultPreloadStaleTime: 0,
    scrollRestoration: true,
  });
}

declare module '@tanstack/react-router' {
  interface Register {
    router: ReturnType<typeof createAppRouter>;
  }
}
