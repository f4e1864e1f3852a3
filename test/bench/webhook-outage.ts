/**
 * The bench's "receiver down, messages waiting, then back" scenario (test/bench/webhooks.ts):
 * BENCH_OUTAGE (10m; 0 skips it), BENCH_OUTAGE_MESSAGES (5000), BENCH_OUTAGE_WAIT (2h: how long to
 * wait for the drain).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { duration } from '../../lib/setting-kinds.js';
import type { EndpointRepository } from '../../domain/webhooks/endpoints.js';
import type { WebhookBench } from './webhook-bench-processes.js';

export const OUTAGE_MS = duration.parse(process.env.BENCH_OUTAGE ?? '10m');
const OUTAGE_MESSAGES = Number(process.env.BENCH_OUTAGE_MESSAGES ?? 5000);
const OUTAGE_WAIT_MS = duration.parse(process.env.BENCH_OUTAGE_WAIT ?? '2h');
const RECEIVER_WORK_MS = 5;
export const describeMs = (ms: number) =>
  ms < 1000 ? `${ms.toFixed(0)} ms` : ms < 120_000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 60_000).toFixed(1)} min`;

/** What the scenario takes from the bench: its servers, its event sender and its CPU reading. */
export type OutageBench = Pick<WebhookBench, 'pool' | 'cfg' | 'cpuNow' | 'postEvent'> & {
  repo: EndpointRepository;
  /** Events posted at once. */
  inFlight: number;
  step: (s: string) => void;
};

/**
 * "Receiver down, messages waiting, then back": BENCH_OUTAGE_MESSAGES events to one endpoint whose
 * receiver answers 503 for BENCH_OUTAGE from the first send, then 204 (verifying); time to drain
 * from the receiver's return, CPU per delivery over the whole scenario, most requests in flight at
 * the receiver, and every message delivered once.
 */
export async function outageScenario(b: OutageBench): Promise<string> {
  const { pool, repo, cfg, cpuNow, postEvent, inFlight: senders, step } = b;
  const slug = `bench-${randomUUID().slice(0, 8)}`;
  const ws = (
    await pool.query<{ id: string }>('INSERT INTO workspaces (slug, name) VALUES ($1, $1) RETURNING id', [slug])
  ).rows[0]!.id;
  let down = true;
  let inFlight = 0;
  let mostInFlight = 0;
  let mostInFlightAfterBack = 0;
  let failedAnswers = 0;
  let verifyFailures = 0;
  const delivered = new Map<string, number>();
  const deliveries = new Map<string, number>();
  const verifier: { webhook?: Webhook } = {};
  const server = http.createServer((req, res) => {
    inFlight++;
    mostInFlight = Math.max(mostInFlight, inFlight);
    if (!down) mostInFlightAfterBack = Math.max(mostInFlightAfterBack, inFlight);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = (status: number) => {
        inFlight--;
        res.writeHead(status).end();
      };
      if (down) {
        failedAnswers++;
        return answer(503);
      }
      const id = String(req.headers['webhook-id']);
      try {
        verifier.webhook!.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
      } catch {
        verifyFailures++;
      }
      deliveries.set(id, (deliveries.get(id) ?? 0) + 1);
      if (!delivered.has(id)) delivered.set(id, performance.now());
      // a receiver that takes RECEIVER_WORK_MS per delivery, so the requests in flight show the sender's concurrency
      setTimeout(() => answer(204), RECEIVER_WORK_MS);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { secret } = await repo.create(ws, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
  });
  verifier.webhook = new Webhook(secret);
  await new Promise((r) => setTimeout(r, 1_200));
  const title = `receiver down ${describeMs(OUTAGE_MS)} (BENCH_OUTAGE${process.env.BENCH_OUTAGE ? `=${process.env.BENCH_OUTAGE}` : ' default'}), ${OUTAGE_MESSAGES} messages waiting, then back; retry schedule ${cfg.WEBHOOK_RETRY_SCHEDULE.map(describeMs).join(', ')}`;
  step(title);
  const before = cpuNow();
  const start = performance.now();
  const agent = new http.Agent({ keepAlive: true, maxSockets: senders });
  let next = 0;
  await Promise.all(
    Array.from({ length: senders }, async () => {
      while (next < OUTAGE_MESSAGES) {
        const n = next++;
        await postEvent(agent, slug, `bench-${slug}-${n}`, n);
      }
    }),
  );
  agent.destroy();
  const untilBack = start + OUTAGE_MS - performance.now();
  if (untilBack > 0) await new Promise((r) => setTimeout(r, untilBack));
  down = false;
  const back = performance.now();
  step(
    `receiver back after ${describeMs(back - start)}; waiting for the drain (at most ${describeMs(OUTAGE_WAIT_MS)})`,
  );
  const deadline = Date.now() + OUTAGE_WAIT_MS;
  while (delivered.size < OUTAGE_MESSAGES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const after = cpuNow();
  server.closeAllConnections();
  server.close();
  const at = [...delivered.values()].sort((a, b) => a - b);
  const cpu = Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - before[k]!]));
  const cpuTotal = Object.values(cpu).reduce((a, b) => a + b, 0);
  const perDelivery = (sec: number) => ((sec * 1000) / Math.max(1, delivered.size)).toFixed(2);
  const twice = [...deliveries.values()].filter((n) => n > 1).length;
  return [
    title,
    `  delivered         ${delivered.size} of ${OUTAGE_MESSAGES}${twice ? `, ${twice} MORE THAN ONCE` : ', each once'}${verifyFailures ? `, ${verifyFailures} FAILED VERIFICATION` : ', every one verified'}; ${failedAnswers} attempts answered 503 while down`,
    `  drain             first delivery ${at.length ? describeMs(at[0]! - back) : '—'} after the receiver was back (the next scheduled retry), last ${at.length ? describeMs(at.at(-1)! - back) : '—'}; the drain itself (first → last) ${at.length ? describeMs(at.at(-1)! - at[0]!) : '—'}`,
    `  no storm          at most ${mostInFlightAfterBack} requests in flight at the receiver after its return, each answered after ${RECEIVER_WORK_MS} ms (${mostInFlight} while down; WEBHOOK_ENDPOINT_CONCURRENCY ${cfg.WEBHOOK_ENDPOINT_CONCURRENCY})`,
    `  CPU per delivery  ${perDelivery(cpuTotal)} ms over the whole scenario: ${Object.entries(cpu)
      .map(([k, v]) => `${k} ${perDelivery(v)}`)
      .join(', ')}`,
  ].join('\n');
}
