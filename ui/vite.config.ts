import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The web UI: built into dist/ui and served by the server under /ui/ (src/http/ui-routes.ts).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  // No inline scripts anywhere (the CSP forbids them): no module-preload polyfill.
  build: {
    outDir: fileURLToPath(new URL('../dist/ui', import.meta.url)),
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  logLevel: 'warn',
});
