/**
 * The Temporal servers the scripts start keep to no tracing of their own: they read
 * OTEL_TRACES_EXPORTER as the platform does, and refused to start on the `zipkin` that `npm run dev`
 * sets for the platform's processes ("unsupported OTEL exporter"), which stopped `npm run dev`.
 */
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { freePort, startTemporal } from '../../scripts/local-servers.js';
import { tempDir } from '../support/env.js';

afterEach(() => {
  delete process.env.OTEL_TRACES_EXPORTER;
});

it("starts the Temporal dev server while the platform's processes trace to Zipkin (as under npm run dev)", async () => {
  process.env.OTEL_TRACES_EXPORTER = 'zipkin';
  const temporal = await startTemporal({ dir: path.join(tempDir('temporal-env'), 'temporal'), port: await freePort() });
  try {
    const connection = await Connection.connect({ address: temporal.address });
    const { serverVersion } = await connection.workflowService.getSystemInfo({});
    expect(serverVersion).toMatch(/^\d+\.\d+\.\d+/);
    await connection.close();
  } finally {
    await temporal.stop();
  }
});
