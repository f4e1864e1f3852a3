import { defineConfig } from 'vitest/config';

/** `npm run test:odoo`: the real-Odoo suite (needs ODOO_SRC or ODOO_URL; not part of .ci/run). */
export default defineConfig({
  test: {
    include: ['test/odoo/**/*.odoo-test.ts'],
    // the portal's build first (the sign-in tests open it), then the run's servers
    globalSetup: ['test/odoo/global-setup.ts', 'test/global-setup.ts'],
    setupFiles: ['test/support/setup-runtime.ts'],
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 300_000,
    hookTimeout: 900_000,
  },
});
