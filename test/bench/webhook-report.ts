/**
 * What `npm run bench:webhooks` prints (test/bench/webhooks.ts): per scenario its deliveries,
 * deliveries/s, p50/p99 (nearest rank, as the anchor harness), the retried ones, the burst breakdown,
 * the Svix row with its date (read from anchors/svix-webhooks.json) and CPU per delivery by process.
 */
import { readFileSync } from 'node:fs';
import { percentile } from './percentile.js';
import type { Scenario, ScenarioRun } from './webhook-scenarios.js';

/** The Svix rows, measured with the anchor harness in one window with ours (see the file for when and how). */
const svixAnchor = JSON.parse(readFileSync(new URL('./anchors/svix-webhooks.json', import.meta.url), 'utf8')) as {
  measured: string;
  scenarios: Record<string, string>;
};

const fmt = (ms: number) => (ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(2)} s`);

export const scenarioTitle = (sc: Scenario, inFlight: number) =>
  `${sc.events} events × ${sc.endpoints} endpoint(s), ${sc.failing} % failing first attempts, ${sc.rate ? `paced at ${sc.rate} events/s` : `${inFlight} in flight`}`;

/** A scenario's printed lines. */
export function scenarioReport(title: string, r: ScenarioRun): string {
  const { sc, latencies, retried } = r;
  const pct = (q: number) => percentile(latencies, q);
  const cpuTotal = Object.values(r.cpu).reduce((a, b) => a + b, 0);
  const perDelivery = (s: number) => ((s * 1000) / Math.max(1, r.delivered)).toFixed(2);
  const svix = svixAnchor.scenarios[`${sc.events}x${sc.endpoints}@${sc.failing}`];
  return [
    title,
    `  delivered         ${r.delivered} of ${r.expected}${r.verifyFailures ? `, ${r.verifyFailures} FAILED VERIFICATION` : ', every one verified with standardwebhooks'}; events sent in ${r.sendSeconds.toFixed(1)} s (${(sc.events / r.sendSeconds).toFixed(0)}/s)`,
    `  ours              ${(r.delivered / r.seconds).toFixed(0)} deliveries/s, p50 ${fmt(pct(0.5))}, p99 ${fmt(pct(0.99))} (min ${fmt(latencies[0] ?? NaN)}, max ${fmt(latencies.at(-1) ?? NaN)}; ${retried.length} of ${latencies.length} retried), ${perDelivery(cpuTotal)} ms CPU per delivery`,
    ...(retried.length > 0
      ? [
          `  failed ones       ${retried.length} delivered on their retry ${fmt(retried[0]!)}–${fmt(retried.at(-1)!)} after the failed attempt (median ${fmt(retried[Math.floor(retried.length / 2)]!)})`,
        ]
      : []),
    ...r.breakdown,
    `  Svix (${svixAnchor.measured}) ${svix ?? '—'}${sc.rate ? " (Svix's rows are its 32-in-flight bursts: its API accepted 317–382 events/s)" : ''}`,
    `  CPU per delivery  ${Object.entries(r.cpu)
      .map(([k, v]) => `${k} ${perDelivery(v)}`)
      .join(', ')}; not counted: the bench's sender + receivers ${perDelivery(r.selfSeconds)}`,
  ].join('\n');
}

/** The whole printout: the header with the load average before the run, each scenario, the anchor without a Svix row. */
export function benchReport(replicas: number, loadBefore: string, results: string[]): string {
  return `
Webhook delivery (npm run bench:webhooks; ${replicas} dispatcher(s) and ${replicas} worker(s); first attempt from the dispatcher, retries in one Temporal workflow per failing endpoint (batches from its schedule in PostgreSQL); load average before: ${loadBefore})

${results.join('\n\n')}

Anchor without a Svix row above (ANCHORS.md): Temporal, one workflow per delivery: 42–43 deliveries/s, p50 23 s, p99 35–37 s, ≈ 43 ms CPU per delivery
`;
}
