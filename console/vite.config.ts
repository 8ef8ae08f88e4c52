// Builds the console into console/dist, which the control plane serves at /console
// (control-plane/console/serve.ts). Run by the root package's `prepare` (npm install / npm ci).
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
  },
});
