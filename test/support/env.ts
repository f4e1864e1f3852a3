/** The configuration a test uses: the run's real servers (from global setup) plus free ports. */
import { mkdtempSync } from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { parseConfig, type Config } from '../../lib/config.js';
import { freePort } from '../../scripts/local-servers.js';
import { STAND_IN_ADDONS_PATH } from '../../sandbox/erp/install.js';

export async function testConfig(overrides: Record<string, string> = {}): Promise<Config> {
  const [apiPort, notificationsPort, smtpPort] = await Promise.all([freePort(), freePort(), freePort()]);
  return parseConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: inject('databaseUrl'),
    REDIS_URL: inject('redisUrl'),
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    // each test file gets its own task queue, so workers of parallel files never steal each other's tasks
    TEMPORAL_TASK_QUEUE: `test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    API_PORT: String(apiPort),
    API_PUBLIC_URL: `http://127.0.0.1:${apiPort}`,
    ACCOUNT_API_URL: `http://127.0.0.1:${apiPort}`,
    NOTIFICATIONS_PORT: String(notificationsPort),
    NOTIFICATIONS_URL: `http://127.0.0.1:${notificationsPort}`,
    SMTP_PORT: String(smtpPort),
    ...inject('objectStoreEnv'),
    LOG_STORE_URL: inject('logStoreUrl'),
    // the ERP stand-in's modules (its neutralize scripts), unless the test runs real Odoo
    ...(overrides.ERP_BACKEND === 'odoo' ? {} : { ERP_ADDONS_PATH: STAND_IN_ADDONS_PATH }),
    ...overrides,
  });
}

export function tempDir(name: string): string {
  return mkdtempSync(path.join(inject('dataDir'), `${name}-`));
}

export const workflowBundle = () => ({ codePath: inject('workflowBundlePath') });
