// Builds the console into console/dist, which the control plane serves at /console
// (control-plane/console/serve.ts). Run by the root package's `prepare` (npm install / npm ci).
import { join } from 'node:path';
import { defineConfig } from 'vite';

export default defineConfig({
  root: import.meta.dirname,
  base: '/console/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // No inline script: the page's CSP allows scripts from its own origin only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 600,
    // Two pages of one build: the tenant's console (API port) and the operator's (ops port only).
    rollupOptions: {
      input: { index: join(import.meta.dirname, 'index.html'), ops: join(import.meta.dirname, 'ops.html') },
    },
  },
});
