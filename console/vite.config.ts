import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The API the dev server forwards to (`npm start` listens on 3000 by default).
const api = process.env.API_URL ?? 'http://localhost:3000';
const apiPaths = ['/auth', '/orgs', '/api', '/openapi.json', '/docs', '/webhooks', '/healthz', '/readyz'];

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    manifest: true,
    // No inline module-preload polyfill: the service's Content-Security-Policy allows scripts from 'self' only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    // The budget that matters is the initial JavaScript, gzipped: scripts/build.ts checks it.
    chunkSizeWarningLimit: 2000,
  },
  server: {
    port: 5173,
    proxy: Object.fromEntries(apiPaths.map((path) => [path, { target: api }])),
  },
});
