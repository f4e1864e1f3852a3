import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/support/setup-runtime.ts'],
    // Temporal workers inside worker threads have run out of wasm memory elsewhere: use processes.
    pool: 'forks',
    // 2 cores: a few files at once, each with its own worker, against one set of servers.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
