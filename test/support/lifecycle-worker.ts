/**
 * The tenant lifecycle's tests on the run's real Temporal dev server: a worker of the workflow
 * bundle on a task queue of the test file's own, with fake peers (fake-tenant-peers.ts) as its
 * activities, and a client. Registers its own beforeAll/afterAll; `client` is set once they ran.
 */
import { afterAll, beforeAll, inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { FakeTenantPeers } from './fake-tenant-peers.js';
import { workflowBundle } from './env.js';
import { workflowSpanSinks } from '../../worker/tracing.js';
import type { TenantClientSpec } from '../../domain/tenants/types.js';

export interface LifecycleWorker {
  taskQueue: string;
  peers: FakeTenantPeers;
  client: Client;
}

export function useLifecycleWorker(name: string): LifecycleWorker {
  const harness = {
    taskQueue: `${name}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    peers: new FakeTenantPeers(),
  } as LifecycleWorker;
  let worker: Worker | undefined;
  let workerRun: Promise<void> | undefined;
  let workerConnection: NativeConnection | undefined;
  let connection: Connection | undefined;

  beforeAll(async () => {
    const address = inject('temporalAddress');
    workerConnection = await NativeConnection.connect({ address });
    worker = await Worker.create({
      connection: workerConnection,
      taskQueue: harness.taskQueue,
      workflowBundle: workflowBundle(),
      sinks: workflowSpanSinks(),
      activities: harness.peers.activities(),
    });
    workerRun = worker.run();
    connection = await Connection.connect({ address });
    harness.client = new Client({ connection });
  });

  afterAll(async () => {
    worker?.shutdown();
    await workerRun;
    await workerConnection?.close();
    await connection?.close();
  });

  return harness;
}

/** The TenantClient spec of the lifecycle tests' tenant `name` (a pro tier on ERP 18 unless overridden). */
export function tenantSpec(name: string, overrides: Partial<TenantClientSpec> = {}): TenantClientSpec {
  return {
    subdomain: name,
    projectId: 42,
    tier: 'pro',
    erpVersion: '18',
    ownerEmail: `owner@${name}.test`,
    ownerName: 'Owner',
    ...overrides,
  };
}
