import '@mantine/core/styles.css';
import '@mantine/notifications/styles.css';
import '@mantine/charts/styles.css';
import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { Notifications } from '@mantine/notifications';
import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import { setNonce } from 'get-nonce';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { isUnauthorized } from './api/client';
import { clearRefusals } from './lib/notices';
import { createAppRouter } from './router';
import { cssVariablesResolver, theme } from './theme';

// The service sends a fresh nonce with the page; Mantine puts it on the <style> elements it adds,
// so the Content-Security-Policy needs no 'unsafe-inline'.
const styleNonce = document.querySelector<HTMLMetaElement>('meta[name="csp-nonce"]')?.content ?? '';
// The same for the scroll lock of Mantine's modals (react-remove-scroll adds a <style> through get-nonce).
setNonce(styleNonce);

const queryClient: QueryClient = new QueryClient({
  defaultOptions: {
    queries: {
      retry: (count, error) => !isUnauthorized(error) && (error as { status?: number }).status === undefined && count < 2,
    },
  },
  // A session that ended (expired, signed out elsewhere) leads to sign-in, then back here.
  queryCache: new QueryCache({
    onError: (error) => {
      if (isUnauthorized(error) && !window.location.pathname.startsWith('/sign-in')) {
        queryClient.clear();
        void router.navigate({ to: '/sign-in', search: { redirect: window.location.pathname + window.location.search } });
      }
    },
  }),
});
const router = createAppRouter(queryClient);
router.subscribe('onResolved', (event) => {
  if (event.pathChanged) clearRefusals();
});

createRoot(document.getElementById('root') as HTMLElement).render(
  <StrictMode>
    <MantineProvider
      theme={theme}
      cssVariablesResolver={cssVariablesResolver}
      defaultColorScheme="light"
      getStyleNonce={() => styleNonce}
    >
      {/* Top centre: the header's middle is empty, where a refusal that stays until closed covers neither
          the account menu at the header's right nor a page's actions below it. */}
      <Notifications position="top-center" />
      <QueryClientProvider client={queryClient}>
        <ModalsProvider>
          <RouterProvider router={router} />
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>
  </StrictMode>,
);
