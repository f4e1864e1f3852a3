/** An in-process worker on the test's Temporal, started and stopped at will (a test stops it to see workflows wait, then resume). */
import type { NativeConnection, Worker } from '@temporalio/worker';
import type { Config } from '../../lib/config.js';
import { createWorker } from '../../worker/index.js';
import { developmentErpInstaller } from '../../scripts/erp-stand-in.js';
import { workflowBundle } from './env.js';

export function restartableWorker(cfg: Config) {
  let worker:
    { worker: Worker; connection: NativeConnection; closeDeps(): Promise<void>; running: Promise<void> } | undefined;
  return {
    async start() {
      const created = await createWorker(cfg, {
        workflowBundle: workflowBundle(),
        erpInstaller: developmentErpInstaller(cfg),
      });
      worker = { ...created, running: created.worker.run() };
    },
    async stop() {
      if (!worker) return;
      worker.worker.shutdown();
      await worker.running;
      await worker.connection.close();
      await worker.closeDeps();
      worker = undefined;
    },
  };
}
