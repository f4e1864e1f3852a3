// The workspace portal's build: Vite + React, served by the account API at /app/ (api/routes/web).
// `npm run web:build` writes web/dist; `npm run web:dev` serves it with hot reload and forwards /api
// to the account API (API_PUBLIC_URL, default http://127.0.0.1:3000).
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/app/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 600 },
  server: { proxy: { '/api': process.env.API_PUBLIC_URL ?? 'http://127.0.0.1:3000' } },
});
