/**
 * `npm run bench:temporal-floor`: what Temporal itself costs per workflow of the tenant lifecycle's
 * shape, the floor under `bench:provision`'s Temporal and worker CPU. Starts the Temporal dev server
 * (or, with BENCH_TEMPORAL=cluster, the production-shaped server on PostgreSQL) in a throw-away
 * folder and a worker in this process whose activities do nothing, then starts BENCH_WORKFLOWS
 * (default 200) workflows at once for each shape: none, the lifecycle's remote steps alone, and its
 * remote and local steps (7 activities and 15 local activities, as `bench:provision` counts a
 * tenant's). Prints the time until all completed and the CPU per workflow of the Temporal server
 * (with PostgreSQL for the cluster) and of this process (worker and client); asserts nothing.
 */
import path from 'node:path';
import { loadavg } from 'node:os';
import { rmSync } from 'node:fs';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { freePort, startPostgres, stopAll, throwAwayDir } from '../../scripts/local-servers.js';
import { pidFromFile, treeCpuSeconds } from './provision-figures.js';
import { startTemporalOfKind, temporalKindFromEnv } from './provision-servers.js';

const WORKFLOWS = Number(process.env.BENCH_WORKFLOWS ?? 200);
const KIND = temporalKindFromEnv(process.env.BENCH_TEMPORAL);
/** [remote activities, local activities] per workflow. */
const SHAPES: [number, number][] = [
  [0, 0],
  [7, 0],
  [7, 15],
];
const dir = throwAwayDir('plana-bench-temporal-floor-');

/** The Temporal server of the chosen shape, and the processes whose CPU is Temporal's (its PostgreSQL's too, for the cluster). */
async function startServer(): Promise<{ address: string; pids: number[] }> {
  if (KIND === 'dev') {
    const server = await startTemporalOfKind(path.join(dir, 'temporal'), KIND);
    return { address: server.address, pids: [server.pid] };
  }
  const pg = await startPostgres({ dir: path.join(dir, 'postgres'), port: await freePort() });
  const server = await startTemporalOfKind(path.join(dir, 'temporal'), KIND, pg);
  return { address: server.address, pids: [server.pid, pidFromFile(path.join(dir, 'postgres', 'postgres.pid'))] };
}

Runtime.install({ logger: new DefaultLogger('WARN') });
try {
  const server = await startServer();
  const serverCpu = () => server.pids.reduce((s, pid) => s + treeCpuSeconds(pid), 0);
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: server.address }),
    taskQueue: 'floor',
    workflowsPath: path.join(import.meta.dirname, 'floor-workflow.ts'),
    activities: { noWork: async (step: number) => step },
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });
  await client.workflow.execute('emptyLifecycle', { taskQueue: 'floor', workflowId: 'warm-up', args: [1, 1] });

  console.log(
    `\nTemporal's own CPU per workflow (${KIND === 'dev' ? 'dev server' : 'cluster on PostgreSQL'}), ${WORKFLOWS} started at once:`,
  );
  for (const [remote, local] of SHAPES) {
    const [server0, own0, t0, load0] = [serverCpu(), process.cpuUsage(), Date.now(), loadavg()[0]!];
    const ids = Array.from({ length: WORKFLOWS }, (_, i) => `floor-${remote}-${local}-${i}`);
    await Promise.all(
      ids.map((workflowId) =>
        client.workflow.start('emptyLifecycle', { taskQueue: 'floor', workflowId, args: [remote, local] }),
      ),
    );
    await Promise.all(ids.map((id) => client.workflow.getHandle(id).result()));
    const own = process.cpuUsage(own0);
    const per = (seconds: number) => `${((seconds / WORKFLOWS) * 1000).toFixed(1).padStart(6)} ms`;
    console.log(
      `  ${String(remote).padStart(2)} activities + ${String(local).padStart(2)} local: all done in ${((Date.now() - t0) / 1000).toFixed(1).padStart(5)} s; ` +
        `server${KIND === 'cluster' ? ' + PostgreSQL' : ''} ${per(serverCpu() - server0)}, worker + client ${per((own.user + own.system) / 1e6)} (load ${load0.toFixed(2)} → ${loadavg()[0]!.toFixed(2)})`,
    );
  }
  worker.shutdown();
  await running;
  await connection.close();
} finally {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
}
