/**
 * The workspace portal's build (web/ → web/dist, which the account API serves at /app/), as
 * `npm run web:build` makes it: for `npm run dev` and for test runs that open the portal in a
 * browser outside `npm test` (the real-Odoo suite's global setup).
 */
import { build } from 'vite';

export async function buildPortal(): Promise<void> {
  // Vite sets NODE_ENV=production in this process for its build; the platform's processes started
  // after it inherit the environment, and production configuration refuses the development set-up
  const nodeEnv = process.env.NODE_ENV;
  try {
    await build({ configFile: new URL('../web/vite.config.ts', import.meta.url).pathname, logLevel: 'warn' });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
}
