/**
 * `npm run bench:webhooks`: webhook delivery measured the way ANCHORS.md measured Svix and the
 * one-workflow-per-delivery Temporal design. Private PostgreSQL, Redis and Temporal dev server in
 * a temporary folder; the events service, the webhook dispatcher and the Temporal worker each as
 * their own process; one loopback HTTP receiver per endpoint answering 204 and verifying every
 * delivery with the public `standardwebhooks` library; the bench posts events to the events
 * service with 32 requests in flight.
 *
 * Per scenario (E events × N endpoints, an exact share of first attempts answered 500): deliveries/s
 * (first verified 2xx per message × endpoint, from the first send to the last first delivery),
 * event → delivered p50/p99 (from the send of the event), how long after the failed attempt the
 * failed ones were delivered, and CPU per delivery from /proc for the dispatcher, worker, events
 * service, Temporal, PostgreSQL and Redis (and, apart, the bench's own sender + receivers), each
 * printed beside the Svix row of ANCHORS.md; with one endpoint, where a message's time went, stage by
 * stage (webhook-burst-breakdown.ts).
 *
 * BENCH_SCENARIOS ("2000x1@0,2000x1@0/420,1000x4@0,2000x1@1,2000x1@1/420,2000x1@10,2000x1@10/420" by default:
 * events x endpoints @ failing % [/ events per second: paced instead of as fast as BENCH_IN_FLIGHT
 * allows; 420/s is the rate Svix sustained]), BENCH_REPLICAS (1: how many dispatchers and how many
 * workers, each its own process; their CPU is summed per kind), BENCH_IN_FLIGHT (32), BENCH_WARM_UP (2 unreported rounds
 * of 1,000 events first, the second with 1 % failing) and BENCH_CPU_PROF (a folder:
 * the dispatcher and the worker write V8 CPU profiles there) tune it; WEBHOOK_ENDPOINT_CONCURRENCY,
 * WEBHOOK_DISPATCH_BATCH, WEBHOOK_DISPATCH_PARALLEL, WEBHOOK_MAX_IN_FLIGHT and WEBHOOK_RETRY_SCHEDULE
 * pass to the dispatcher and the worker.
 *
 * Then "receiver down, messages waiting, then back" (webhook-outage.ts): BENCH_OUTAGE (10m; 0 skips it,
 * a shorter one for a quick run, e.g. BENCH_OUTAGE=30s WEBHOOK_RETRY_SCHEDULE=5s,20s,40s,2m,5m),
 * BENCH_OUTAGE_MESSAGES (5000), BENCH_OUTAGE_WAIT (2h: how long to wait for the drain). With the
 * default schedule the messages come back on their 30-minute retry.
 *
 * The parts: the processes and servers (webhook-bench-processes.ts), the scenarios
 * (webhook-scenarios.ts), what is printed (webhook-report.ts).
 */
import { readFileSync } from 'node:fs';
import { EndpointRepository } from '../../domain/webhooks/endpoints.js';
import { startWebhookBench, stopWebhookBench } from './webhook-bench-processes.js';
import { OUTAGE_MS, outageScenario } from './webhook-outage.js';
import { benchReport, scenarioReport, scenarioTitle } from './webhook-report.js';
import { parseScenarios, runScenario, warmUps } from './webhook-scenarios.js';

const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 32);
const WARM_UP_ROUNDS = Number(process.env.BENCH_WARM_UP ?? 2);
/** How many dispatchers and how many workers run (each its own process). */
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 1);
const scenarios = parseScenarios(
  process.env.BENCH_SCENARIOS ?? '2000x1@0,2000x1@0/420,1000x4@0,2000x1@1,2000x1@1/420,2000x1@10,2000x1@10/420',
);
const step = (s: string) => console.error(`[bench:webhooks] ${s}`);

const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
try {
  const bench = await startWebhookBench(REPLICAS, step);
  const results: string[] = [];
  // warm-up rounds first (JIT of every Node process, connections, caches), not reported: the first
  // burst after a start ran at a third of the rate of the next one (the events service spent 0.3 ms
  // CPU per event instead of 0.05); from the second on 1 % fail, so the retry path (Temporal client,
  // worker, workflow bundle) is warm too (the first scenario with failures had p50 0.3 s otherwise)
  for (const sc of [...warmUps(WARM_UP_ROUNDS), ...scenarios]) {
    const title = scenarioTitle(sc, IN_FLIGHT);
    const run = await runScenario(bench, sc, IN_FLIGHT, step, title);
    if (!sc.warmUp) results.push(scenarioReport(title, run));
  }
  if (OUTAGE_MS > 0) {
    const repo = new EndpointRepository(bench.pool, bench.cfg.SECRETS_KEY);
    results.push(await outageScenario({ ...bench, repo, inFlight: IN_FLIGHT, step }));
  }
  const peaks = Object.entries(bench.peakMemoryMb()).map(([name, mb]) => `${name} ${mb.toFixed(0)} MB`);
  results.push(`Peak resident memory by process: ${peaks.join(', ')}`);
  await bench.disconnect();
  console.log(benchReport(REPLICAS, loadBefore, results));
} finally {
  await stopWebhookBench();
}
