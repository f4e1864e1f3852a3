/**
 * What runs while the chaos bench kills processes: tenants provisioned through the Kubernetes API,
 * webhook events delivered to a verifying receiver (a share of first attempts answered 500), a
 * service-key rotation, and dashboard reads with a workspace key. Each keeps the counts the report
 * prints; callers retry what a real caller would retry (a refused connection while a process is down).
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { Webhook } from 'standardwebhooks';
import type { CustomObjectsApi } from '@kubernetes/client-node';
import { createTenantClient, readyTenantClients, tenantClientsApi } from '../tenant-clients.js';
import { EndpointRepository } from '../../../domain/webhooks/endpoints.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** POSTs until the answer is not a refused connection or a 5xx; counts the attempts that were. */
async function postUntilAccepted(url: string, headers: Record<string, string>, body: string, retried: { n: number }) {
  for (;;) {
    const res = await fetch(url, { method: 'POST', headers, body }).catch(() => undefined);
    if (res && res.status < 500) return res;
    retried.n++;
    await sleep(250);
  }
}

export class TenantLoad {
  private readonly api: CustomObjectsApi;
  readonly readyAfter = new Map<string, number>();
  private startedAt = 0;

  constructor(
    kubeconfigPath: string,
    readonly names: string[],
  ) {
    this.api = tenantClientsApi(kubeconfigPath);
  }

  async applyAll(): Promise<void> {
    this.startedAt = Date.now();
    await Promise.all(this.names.map((name) => createTenantClient(this.api, name, 'Chaos Owner')));
  }

  /** Reads the statuses on the API server (what `kubectl get tenantclients` shows); returns how many are Ready. */
  async poll(): Promise<number> {
    for (const name of await readyTenantClients(this.api))
      if (this.names.includes(name) && !this.readyAfter.has(name))
        this.readyAfter.set(name, Date.now() - this.startedAt);
    return this.readyAfter.size;
  }
}

/** One workspace, one endpoint, one verifying receiver; a deterministic 1 in `failingEvery` messages fails its first attempt. */
export class WebhookLoad {
  readonly deliveries = new Map<string, number>();
  private readonly attempted = new Set<string>();
  failedFirst = 0;
  verifyFailures = 0;
  readonly postRetries = { n: 0 };
  posted = 0;

  private constructor(
    private readonly server: http.Server,
    private readonly verifier: { webhook?: Webhook },
    readonly slug: string,
  ) {}

  static async start(pool: pg.Pool, secretsKey: string, failingEvery: number): Promise<WebhookLoad> {
    const slug = 'chaos-webhooks';
    const ws = (
      await pool.query<{ id: string }>('INSERT INTO workspaces (slug, name) VALUES ($1, $1) RETURNING id', [slug])
    ).rows[0]!.id;
    const verifier: { webhook?: Webhook } = {};
    const load: { it?: WebhookLoad } = {};
    const server = http.createServer((req, res) => load.it!.receive(req, res, failingEvery));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { secret } = await new EndpointRepository(pool, secretsKey).create(ws, {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    });
    verifier.webhook = new Webhook(secret);
    load.it = new WebhookLoad(server, verifier, slug);
    return load.it;
  }

  private receive(req: http.IncomingMessage, res: http.ServerResponse, failingEvery: number): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      const first = !this.attempted.has(id);
      this.attempted.add(id);
      if (first && createHash('sha256').update(id).digest().readUInt16BE(0) % failingEvery === 0) {
        this.failedFirst++;
        return res.writeHead(500).end();
      }
      try {
        this.verifier.webhook!.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>);
      } catch {
        this.verifyFailures++;
      }
      this.deliveries.set(id, (this.deliveries.get(id) ?? 0) + 1);
      res.writeHead(204).end();
    });
  }

  /** Posts `count` invoice.posted events to the events service, evenly over `overMs`, each retried until accepted. */
  async produce(eventsUrl: string, eventsKey: string, count: number, overMs: number): Promise<void> {
    const started = Date.now();
    const headers = { 'content-type': 'application/cloudevents+json', 'x-api-key': eventsKey };
    const inFlight = new Set<Promise<unknown>>();
    for (let n = 0; n < count; n++) {
      const due = started + (n * overMs) / count;
      if (due > Date.now()) await sleep(due - Date.now());
      const body = JSON.stringify({
        specversion: '1.0',
        id: `chaos-${n}`,
        source: '/bench/chaos',
        type: 'invoice.posted',
        time: new Date().toISOString(),
        workspace: this.slug,
        data: { invoice: `INV/${n}`, amount: 42 },
      });
      const sent = postUntilAccepted(`${eventsUrl}/api/v1/events`, headers, body, this.postRetries).then(() => {
        this.posted++;
        inFlight.delete(sent);
      });
      inFlight.add(sent);
      if (inFlight.size >= 32) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** Dashboard reads with a workspace key, one every `everyMs`: counts answers by kind. */
export class DashboardLoad {
  readonly answers = { ok: 0, serverErrors: 0, clientErrors: 0, refused: 0 };
  private stopped = false;

  /** Reads with the key `keyOf` gives once it gives one (a workspace's entry comes with its tenant). */
  async run(keyOf: () => Promise<{ url: string; token: string } | undefined>, everyMs: number): Promise<void> {
    let key: { url: string; token: string } | undefined;
    while (!this.stopped) {
      key ??= await keyOf().catch(() => undefined);
      if (key) await this.read(key.url, key.token);
      await sleep(everyMs);
    }
  }

  private async read(url: string, token: string): Promise<void> {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } }).catch(() => undefined);
    if (!res) this.answers.refused++;
    else {
      await res.arrayBuffer();
      if (res.status >= 500) this.answers.serverErrors++;
      else if (res.status >= 400) this.answers.clientErrors++;
      else this.answers.ok++;
    }
  }

  stop(): void {
    this.stopped = true;
  }
}

/** Starts a rotation of the pair through the ops API (retried while the API is down); returns its workflow id. */
export async function startRotation(apiUrl: string, operatorKey: string, caller: string, target: string) {
  const res = await postUntilAccepted(
    `${apiUrl}/api/ops/service-keys/${caller}/${target}/rotate`,
    { 'content-type': 'application/json', 'x-api-key': operatorKey },
    JSON.stringify({ reason: 'annual' }),
    { n: 0 },
  );
  if (res.status !== 202) throw new Error(`the rotation was refused: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { workflowId: string }).workflowId;
}
