/**
 * What the webhook tests share, all real: the account API, the events service, the notifications
 * service with its SMTP sink, the webhook dispatcher and a Temporal worker on the run's
 * PostgreSQL, Redis and Temporal; HTTP receivers on loopback; a DNS stand-in.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { startApi } from '../../api/server.js';
import { createPool, type Pool } from '../../lib/db.js';
import { readMailbox, startSmtpSink, type SmtpSink } from '../../sandbox/smtp/sink.js';
import { startEvents } from '../../services/events/server.js';
import { startNotifications } from '../../services/notifications/server.js';
import { startDispatcher, type Dispatcher } from '../../services/webhooks/dispatcher.js';
import { freePort } from '../../scripts/local-servers.js';
import { restartableWorker } from './worker.js';
import { cloudEvent, publishEvent } from '../../domain/events/events.js';
import { tempDir, testConfig } from './env.js';
import { configEnv } from './tenant-platform.js';
import { testKeys } from './service-keys.js';
import { addUser, adminOfNewWorkspace, call, login } from './workspace-api.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** An HTTP receiver on loopback: `respond` decides each answer (default 204); every request is kept. */
type Answer = { status: number; headers?: Record<string, string>; body?: string };

export async function startReceiver(
  /** The answer to the n-th request (a promise: a receiver that takes its time). */
  respond: (req: Received, n: number) => Answer | Promise<Answer> = () => ({ status: 204 }),
  host = '127.0.0.1',
  listenPort = 0,
) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      void Promise.resolve(respond(r, received.length)).then((answer) => {
        res.writeHead(answer.status, answer.headers);
        res.end(answer.body);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(listenPort, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}/hook`,
    received,
    /** Distinct webhook-ids seen (a receiver that deduplicates on webhook-id). */
    ids: () => new Set(received.map((r) => String(r.headers['webhook-id']))),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

export async function startWebhookPlatform(
  overrides: Record<string, string> = {},
  opts: { worker?: boolean; dispatcher?: boolean } = {},
) {
  const eventsPort = await freePort();
  const cfg = await testConfig({
    EVENTS_PORT: String(eventsPort),
    EVENTS_URL: `http://127.0.0.1:${eventsPort}`,
    EVENTS_STREAM: `events-wh-${randomUUID().slice(0, 8)}`,
    EVENTS_CLAIM_IDLE_MS: '1000',
    WEBHOOK_ALLOW_HTTP: 'true',
    WEBHOOK_ALLOWED_ADDRESSES: '127.0.0.1/32',
    WEBHOOK_RETRY_SCHEDULE: '200ms,400ms,800ms',
    WEBHOOK_RETRY_JITTER: '0.1',
    WEBHOOK_TIMEOUT_MS: '2000',
    WEBHOOK_SWEEP_AFTER: '3s',
    WEBHOOK_SLOW_DOWN_MIN: '1s',
    WEBHOOK_RETRY_AFTER_MAX: '10s',
    ...overrides,
  });
  const closers: (() => Promise<unknown>)[] = [];
  const pool: Pool = createPool(cfg.DATABASE_URL, 4);
  closers.push(() => pool.end());
  const temporal = new Client({ connection: await Connection.connect({ address: cfg.TEMPORAL_ADDRESS }) });
  closers.push(() => temporal.connection.close());
  const sink: SmtpSink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: tempDir('mail') });
  closers.push(() => sink.close());
  const notifications = await startNotifications(cfg);
  closers.push(() => notifications.close());
  const events = await startEvents(cfg);
  closers.push(() => events.close());
  const api = await startApi(cfg);
  closers.push(() => api.close());

  let dispatcher: Dispatcher | undefined;
  const worker = restartableWorker(cfg);
  const children: ChildProcess[] = [];

  const p = {
    cfg,
    pool,
    temporal,
    sink,
    base: cfg.API_PUBLIC_URL,
    mailsTo: (email: string) => readMailbox(sink.dir).filter((m) => m.to.includes(email)),
    async startDispatcher() {
      dispatcher = await startDispatcher(cfg, { consumer: 'test-dispatcher' });
    },
    async stopDispatcher() {
      await dispatcher?.close();
      dispatcher = undefined;
    },
    startWorker: worker.start,
    stopWorker: worker.stop,
    /** `worker/index.ts`, `services/webhooks/dispatcher.ts` or `api/server.ts` as a process of its own, to be killed. */
    spawn(
      file: 'worker/index.ts' | 'services/webhooks/dispatcher.ts' | 'api/server.ts',
      extra: Record<string, string> = {},
    ): ChildProcess {
      const env = {
        PATH: process.env.PATH!,
        NODE_ENV: 'test',
        ...configEnv(cfg),
        LOG_LEVEL: 'error',
        TEMPORAL_LOG_LEVEL: 'ERROR',
        ...extra,
      };
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, file)], {
        cwd: root,
        env,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      children.push(child);
      return child;
    },
    /** A workspace with an admin (logged in) and an endpoint at `url`; answers the endpoint and its secret. */
    async workspaceWithEndpoint(url: string, body: Record<string, unknown> = {}) {
      const { workspace, admin, accessToken } = await adminOfNewWorkspace(cfg.API_PUBLIC_URL, pool);
      const res = await call(cfg.API_PUBLIC_URL, 'POST', '/api/portal/webhooks', {
        token: accessToken,
        headers: { 'x-workspace': workspace.slug },
        body: { url, ...body },
      });
      if (res.status !== 201) throw new Error(`endpoint create failed: ${res.status} ${JSON.stringify(res.body)}`);
      return {
        workspace,
        admin,
        accessToken,
        endpoint: res.body.endpoint as { id: string },
        secret: res.body.secret as string,
      };
    },
    /** An endpoint at `url` for an existing workspace (e.g. a test tenant's), registered by a new admin of it; answers its secret. */
    async endpointFor(workspaceSlug: string, url: string, eventTypes: string[]) {
      const ws = (await pool.query<{ id: string }>('SELECT id FROM workspaces WHERE slug = $1', [workspaceSlug]))
        .rows[0]!;
      const token = await login(cfg.API_PUBLIC_URL, await addUser(pool, [{ workspaceId: ws.id, role: 'admin' }]));
      const res = await call(cfg.API_PUBLIC_URL, 'POST', '/api/portal/webhooks', {
        token,
        headers: { 'x-workspace': workspaceSlug },
        body: { url, eventTypes },
      });
      if (res.status !== 201) throw new Error(`endpoint create failed: ${res.status} ${JSON.stringify(res.body)}`);
      return { endpoint: res.body.endpoint as { id: string }, secret: res.body.secret as string };
    },
    addUser,
    /** Publishes an event of `workspace` to the events service, as an ERP or the platform would. */
    async publish(
      workspaceSlug: string,
      type = 'invoice.posted',
      data: unknown = { invoice: 'INV/2026/0001', amount: 120 },
    ) {
      const ev = { ...cloudEvent({ id: randomUUID(), source: '/test', type, data }), workspace: workspaceSlug };
      await publishEvent({ eventsUrl: cfg.EVENTS_URL, apiKey: testKeys.events }, ev);
      return ev;
    },
    async close() {
      for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
      await p.stopDispatcher();
      await p.stopWorker();
      for (const close of closers.reverse()) await close().catch(() => {});
    },
  };
  if (opts.worker !== false) await p.startWorker();
  if (opts.dispatcher !== false) await p.startDispatcher();
  return p;
}
export type WebhookPlatform = Awaited<ReturnType<typeof startWebhookPlatform>>;
