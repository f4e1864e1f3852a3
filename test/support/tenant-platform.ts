/**
 * Everything a tenant lifecycle test needs, for real, on the run's PostgreSQL, Redis and Temporal:
 * the account API (ops routes), the worker, the events service with its `client.provisioned`
 * consumer, the notifications service with the SMTP sink, the ERP stand-in and the chat stand-in,
 * each on its own free port, with the filestore and backup roots in throw-away folders and the
 * lifecycle durations shortened.
 */
import { startAuth } from '../../services/auth/server.js';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { inject, expect } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { Redis } from 'ioredis';
import { startApi } from '../../api/server.js';
import type { Config } from '../../lib/config.js';
import { createPool, type Pool } from '../../lib/db.js';
import { probeTenant } from '../../activities/tenant-health.js';
import { startChatStandIn, type ChatStandIn } from '../../sandbox/chat/server.js';
import type { ErpStandIn } from '../../sandbox/erp/server.js';
import { startPlatformErpStandIn } from '../../scripts/erp-stand-in.js';
import { startTenantIngress } from '../../services/tenant-ingress/server.js';
import { readMailbox, startSmtpSink, type SmtpSink } from '../../sandbox/smtp/sink.js';
import { startProvisionedConsumer } from '../../services/events/consumers/provisioned.js';
import { startEvents } from '../../services/events/server.js';
import { startNotifications } from '../../services/notifications/server.js';
import { freePort } from '../../scripts/local-servers.js';
import { restartableWorker } from './worker.js';
import type { Condition, TenantStatus } from '../../domain/tenants/types.js';
import {
  TenantClientApi,
  type KubeApplyResult,
  type TenantClientObject,
} from '../../domain/tenants/tenant-client-api.js';
import { runTenantAction } from '../../domain/tenants/operator-actions.js';
import { kubeCredentials } from '../../lib/kube-config.js';
import { AppError } from '../../lib/errors.js';
import { startTenantController, type TenantController } from '../../services/tenant-controller/index.js';
import { tempDir, testConfig } from './env.js';
import { testKeys } from './service-keys.js';
import { controllerScope, kubeconfigPath, pollTenantClient } from './kubernetes.js';

type Closer = () => Promise<unknown>;

export interface TenantPlatform {
  cfg: Config;
  /** The ERP stand-in's URL (send a tenant's Host header). */
  erpUrl: string;
  /** What the ERP stand-in was asked for `host`, by path family (sandbox/erp/server.ts `requests`). */
  erpRequests(host: string): Record<string, number>;
  pool: Pool;
  /** On the run's Redis (the events stream, the dashboards' cache). */
  redis: Redis;
  temporal: Client;
  sink: SmtpSink;
  api: Awaited<ReturnType<typeof startApi>>;
  /** The rooms the chat stand-in holds (its own storage file), archived ones included. */
  chatChannels(): { name: string; delete_at: number }[];
  /** Starts the chat stand-in (again, on the same port and data folder). */
  startChat(): Promise<void>;
  stopChat(): Promise<void>;
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  /**
   * This file's TenantClients on the run's Kubernetes API server: labelled with `label`, which the
   * platform's controller (started on the first apply) selects, so files running at once never
   * reconcile each other's objects.
   */
  kube: { label: string; api: TenantClientApi; controller(): Promise<TenantController> };
  /** Starts the auth service (the platform's OpenID provider) again, on the same port. */
  startAuth(): Promise<void>;
  stopAuth(): Promise<void>;
  close(): Promise<void>;
}

/** The ERP admin URL on the run's PostgreSQL server (where global setup built the templates). */
export function runErpDatabaseUrl(): string {
  const url = new URL(inject('databaseUrl'));
  url.pathname = '/postgres';
  return url.toString();
}

export async function startTenantPlatform(
  overrides: Record<string, string> = {},
  opts: { worker?: boolean; ingressTo?: string } = {},
): Promise<TenantPlatform> {
  const [erpPort, eventsPort, chatPort, authPort] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const cfg = await testConfig({
    ERP_PORT: String(erpPort),
    ERP_URL: `http://127.0.0.1:${erpPort}`,
    ERP_DATABASE_URL: runErpDatabaseUrl(),
    EVENTS_PORT: String(eventsPort),
    EVENTS_URL: `http://127.0.0.1:${eventsPort}`,
    // a stream of this file's own, so what a test counts on it is its own
    EVENTS_STREAM: `events-test-${randomUUID().slice(0, 8)}`,
    EVENTS_CLAIM_IDLE_MS: '1000',
    CHAT_PORT: String(chatPort),
    CHAT_URL: `http://127.0.0.1:${chatPort}`,
    AUTH_PORT: String(authPort),
    AUTH_URL: `http://127.0.0.1:${authPort}`,
    // the tenants' ERPs as a browser reaches them: their host name on the stand-in's port
    TENANT_BASE_URL: `http://{host}:${erpPort}`,
    FILESTORE_ROOT: tempDir('filestore'),
    BACKUP_ROOT: tempDir('backups'),
    TENANT_READY_DEADLINE: '30s',
    TENANT_PROBE_INTERVAL: '200ms',
    TENANT_RECONCILE_BACKOFF_MAX: '2s',
    TENANT_SOAK_PERIOD: '1h',
    // the account API's billing writes tier changes to the TenantClients on the run's API server
    KUBECONFIG: kubeconfigPath(),
    ...overrides,
  });
  const closers: Closer[] = [];
  const pool = createPool(cfg.DATABASE_URL, 4);
  closers.push(() => pool.end());
  const redis = new Redis(cfg.REDIS_URL);
  closers.push(async () => redis.disconnect());
  const temporal = new Client({ connection: await Connection.connect({ address: cfg.TEMPORAL_ADDRESS }) });
  closers.push(() => temporal.connection.close());

  const sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: tempDir('mail') });
  closers.push(() => sink.close());
  const notifications = await startNotifications(cfg);
  closers.push(() => notifications.close());
  const events = await startEvents(cfg);
  closers.push(() => events.close());
  // the ERP entry: the stand-in (which plays the tenant ingress itself), or the tenant ingress in
  // front of an ERP at `opts.ingressTo` (real Odoo, as with ERP_BACKEND=odoo)
  const erp: { url: string; close(): Promise<void>; requests?: ErpStandIn['requests'] } = opts.ingressTo
    ? await startTenantIngress({ ...cfg, ERP_HOST: '127.0.0.1', ODOO_UPSTREAM_URL: opts.ingressTo, LOG_LEVEL: 'warn' })
    : await startPlatformErpStandIn(cfg, { host: '127.0.0.1', port: erpPort, logger: quietLogger() });
  closers.push(() => erp.close());
  const api = await startApi(cfg);
  closers.push(() => api.close());
  const consumer = await startProvisionedConsumer(cfg);
  closers.push(() => consumer.close());

  const scope = controllerScope();
  const kubeApi = new TenantClientApi(kubeCredentials(scope.env.KUBECONFIG).kubeConfig, 'the test kubeconfig');
  let controller: Promise<TenantController> | undefined;
  closers.push(async () => (await controller)?.close());

  const chatDir = tempDir('chat');
  let chat: ChatStandIn | undefined;
  let auth: Awaited<ReturnType<typeof startAuth>> | undefined;
  const worker = restartableWorker(cfg);

  const platform: TenantPlatform = {
    cfg,
    erpUrl: erp.url,
    // (behind the tenant ingress the ERP is not ours to count: nothing)
    erpRequests: (host) => erp.requests?.(host) ?? {},
    pool,
    redis,
    temporal,
    sink,
    api,
    chatChannels() {
      const file = path.join(chatDir, 'channels.json');
      return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { name: string; delete_at: number }[]) : [];
    },
    async startChat() {
      chat = await startChatStandIn({
        host: '127.0.0.1',
        port: chatPort,
        token: cfg.CHAT_TOKEN,
        teamId: cfg.CHAT_TEAM_ID,
        dir: chatDir,
      });
    },
    async stopChat() {
      await chat?.close();
      chat = undefined;
    },
    startWorker: worker.start,
    stopWorker: worker.stop,
    kube: {
      label: scope.label,
      api: kubeApi,
      controller: () =>
        (controller ??= testConfig({ ...configEnv(cfg), ...scope.env }).then((c) =>
          startTenantController(c, { log: quietLogger() }),
        )),
    },
    async startAuth() {
      auth = await startAuth(cfg);
    },
    async stopAuth() {
      await auth?.close();
      auth = undefined;
    },
    async close() {
      await platform.stopWorker();
      await platform.stopChat();
      await platform.stopAuth();
      for (const close of closers.reverse()) await close().catch(() => {});
    },
  };
  await platform.startChat();
  await platform.startAuth();
  if (opts.worker !== false) await platform.startWorker();
  return platform;
}

function quietLogger() {
  const noop = () => {};
  const logger = {
    trace: noop,
    debug: noop,
    info: noop,
    warn: noop,
    error: noop,
    fatal: noop,
    child: () => logger,
    level: 'silent',
  };
  return logger as never;
}

/** A parsed configuration back as environment variables (for a child process or a second server). */
export function configEnv(cfg: Config): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(cfg)) {
    if (v === undefined) continue;
    // durations are milliseconds once parsed, and a bare number is read back as milliseconds
    env[k] = Array.isArray(v) ? v.join(',') : String(v);
  }
  return env;
}

export const uniqueTenant = (prefix = 't') => `${prefix}-${randomUUID().slice(0, 8)}`;

/** The TenantClient as a YAML file; with `label` (key=value), in metadata.labels (a controller's selector). */
export function tenantYaml(name: string, spec: Partial<Record<string, string | number>> = {}, label?: string): string {
  const s = {
    subdomain: name,
    projectId: 42,
    tier: 'starter',
    erpVersion: '18',
    ownerEmail: `owner@${name}.test`,
    ownerName: 'Ada Owner',
    ...spec,
  };
  const lines = Object.entries(s).map(([k, v]) => `  ${k}: ${typeof v === 'string' ? JSON.stringify(v) : v}`);
  const labels = label ? `  labels:\n    ${label.replace('=', ': ')}\n` : '';
  return `apiVersion: plana.dev/v1alpha1\nkind: TenantClient\nmetadata:\n  name: ${name}\n${labels}spec:\n${lines.join('\n')}\n`;
}

/** The TenantClient as `kubectl apply -f` would send it, labelled for this file's controller. */
export function tenantManifest(p: TenantPlatform, name: string, spec: Partial<Record<string, string | number>> = {}) {
  const [key, value] = p.kube.label.split('=') as [string, string];
  return {
    metadata: { name, labels: { [key]: value } },
    spec: {
      subdomain: name,
      projectId: 42,
      tier: 'starter',
      erpVersion: '18',
      ownerEmail: `owner@${name}.test`,
      ownerName: 'Ada Owner',
      ...spec,
    } as never,
  };
}

/**
 * Applies a TenantClient on the Kubernetes API (what `kubectl apply` does) with this file's
 * controller running, which starts or updates its workflow: `created`, `configured` or `unchanged`.
 */
export async function applyTenant(
  p: TenantPlatform,
  name: string,
  spec: Partial<Record<string, string | number>> = {},
): Promise<KubeApplyResult> {
  await p.kube.controller();
  return (await p.kube.api.apply(tenantManifest(p, name, spec))).result;
}

/** `kubectl delete tenantclient <name> --wait=false`: the controller cancels it (the soak period runs). */
export async function deleteTenant(p: TenantPlatform, name: string): Promise<void> {
  await p.kube.controller();
  await p.kube.api.delete(name);
}

/**
 * Deletes the TenantClient and deprovisions it now rather than after the soak period: once the
 * controller has cancelled it, the workflow is told to deprovision (the signal an operator's
 * "deprovision now" sends); then the finalizer goes and the object with it.
 */
export async function deprovisionNow(p: TenantPlatform, name: string): Promise<void> {
  await deleteTenant(p, name);
  await waitForStatus(p, name, (s) => s.phase === 'Cancelled' || s.phase.startsWith('Deprovision'));
  await runTenantAction({ pool: p.pool, temporal: p.temporal, config: p.cfg }, name, 'delete').catch((err) => {
    // already deprovisioning (or done): nothing left to ask for
    if (!(err instanceof AppError && err.code === 'CONFLICT')) throw err;
  });
  await waitForKubeTenant(p, name, (o) => o === undefined);
}

export const kubeCondition = (obj: TenantClientObject | undefined, type: Condition['type']) =>
  obj?.status?.conditions?.find((c) => c.type === type);

/** Waits until the TenantClient on the Kubernetes API (or its absence) satisfies `predicate`. */
export function waitForKubeTenant(
  p: TenantPlatform,
  name: string,
  predicate: (obj: TenantClientObject | undefined) => boolean,
  timeout = 60_000,
): Promise<TenantClientObject | undefined> {
  return pollTenantClient(() => p.kube.api.get(name).catch(() => undefined), predicate, timeout);
}

export function ops(p: TenantPlatform, method: 'GET' | 'POST' | 'DELETE', url: string) {
  return p.api.app.inject({ method, url, headers: { 'x-api-key': testKeys.operator } });
}

export async function describe(
  p: TenantPlatform,
  name: string,
): Promise<{ status: TenantStatus; statusSource: string; [k: string]: unknown }> {
  const res = await ops(p, 'GET', `/api/ops/tenant-clients/${name}`);
  expect(res.statusCode).toBe(200);
  return res.json();
}

export const condition = (status: TenantStatus, type: 'Synced' | 'Ready') =>
  status.conditions.find((c) => c.type === type);

/** Waits until the tenant's mirrored status satisfies `predicate`; returns that status. */
export async function waitForStatus(
  p: TenantPlatform,
  name: string,
  predicate: (s: TenantStatus) => boolean,
  timeout = 60_000,
): Promise<TenantStatus> {
  let last: TenantStatus | undefined;
  const polled = expect
    .poll(
      async () => {
        const { rows } = await p.pool.query<{ status: TenantStatus }>(
          'SELECT status FROM tenant_status WHERE name = $1',
          [name],
        );
        last = rows[0]?.status;
        return last?.conditions ? predicate(last) : false;
      },
      { timeout, interval: 100 },
    )
    .toBe(true);
  await polled.catch((err: Error) => {
    const seen = last
      ? { phase: last.phase, currentStep: last.currentStep, conditions: last.conditions, steps: last.steps.slice(-5) }
      : 'no status yet';
    throw new Error(`${err.message}\nlast status of ${name}: ${JSON.stringify(seen, null, 2)}`);
  });
  return last!;
}

export const isReady = (s: TenantStatus) => condition(s, 'Ready')?.status === 'True';

export async function tenantHost(p: TenantPlatform, name: string) {
  return `${name}.${p.cfg.TENANT_DOMAIN}`;
}

/** The readiness probe the workflow runs: /web/health, then `authenticate` on the tenant database. */
export const health = (p: TenantPlatform, host: string) =>
  probeTenant(
    { erpUrl: p.cfg.ERP_URL, platformPool: p.pool, secretsKey: p.cfg.SECRETS_KEY },
    { host, tenant: host.slice(0, -(p.cfg.TENANT_DOMAIN.length + 1)), database: host },
  );

export const mailsTo = (p: TenantPlatform, email: string) =>
  readMailbox(p.sink.dir).filter((m) => m.to.includes(email));
