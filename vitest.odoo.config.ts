import { defineConfig } from 'vitest/config';

/** `npm run test:odoo`: the real-Odoo suite (needs ODOO_SRC or ODOO_URL; not part of .ci/run). */
export default defineConfig({
  test: {
    include: ['test/odoo/**/*.odoo-test.ts'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/support/setup-runtime.ts'],
    pool: 'forks',
    maxWorkers: 1,
    testTimeout: 300_000,
    hookTimeout: 900_000,
  },
});
