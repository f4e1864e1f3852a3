/**
 * The consequences of `client.provisioned` (specification §3.2, §6), as consumer group
 * `provisioning` of the events stream. For each such event:
 *   1. the account API's POST /api/webhooks/provisioned creates the workspace entry (idempotent);
 *   2. the first welcome e-mail is started, once per tenant however often the event arrives
 *      (domain/notifications/welcome.ts startFirstWelcomeEmail).
 * The entry is acknowledged after both succeeded; a failure leaves it pending, and it is retried
 * (by this or another consumer) once it has been idle for EVENTS_CLAIM_IDLE_MS. An event the
 * account API refuses as invalid (400/422) can never succeed: it is logged and acknowledged.
 */
import { hostname } from 'node:os';
import { Redis } from 'ioredis';
import { config as loadConfig, type Config } from '../../../lib/config.js';
import { createPool } from '../../../lib/db.js';
import { createLogger, type Logger } from '../../../lib/logger.js';
import { connectTemporal } from '../../../lib/temporal.js';
import { traceOf, type CloudEvent } from '../../../domain/events/events.js';
import { runConsumer } from '../../../domain/events/consumer.js';
import { startFirstWelcomeEmail } from '../../../domain/notifications/welcome.js';
import type { SecretStore } from '../../../domain/service-keys/secret-store.js';
import { createSecretStore } from '../../../domain/service-keys/secret-store-factory.js';
import { CLIENT_PROVISIONED, type ClientProvisionedData } from '../../../domain/tenants/provisioned-event.js';
import { runAsMain } from '../../../lib/service-app.js';
import { watchStreamGroup } from '../../../lib/metrics.js';
import { inChildSpan, inTraceOf } from '../../../lib/tracing.js';

export const PROVISIONING_GROUP = 'provisioning';
/** This consumer's name in the service-key inventory (domain/service-keys/inventory.ts). */
export const PROVISIONING_CALLER = 'provisioning';

/** What is missing from the `data` of a `client.provisioned` event (none when it is usable). */
function dataProblems(data: unknown): string[] {
  if (typeof data !== 'object' || data === null) return ['data must be an object'];
  const d = data as Record<string, unknown>;
  return ['tenant', 'ownerEmail', 'ownerName', 'tier', 'erpVersion']
    .filter((f) => typeof d[f] !== 'string' || d[f] === '')
    .map((f) => `data.${f} is required`);
}

/** POST /api/webhooks/provisioned; true when done, false when refused for good, throws to retry. */
async function createWorkspaceEntry(
  cfg: Config,
  secrets: SecretStore,
  data: ClientProvisionedData,
  log: Logger,
): Promise<boolean> {
  // read per call (cached briefly): a rotated key reaches this consumer without a restart
  const apiKey = (await secrets.current(PROVISIONING_CALLER, 'account-api')).key;
  let res: Response;
  try {
    res = await fetch(new URL('/api/webhooks/provisioned', cfg.ACCOUNT_API_URL), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({
        tenant: data.tenant,
        ...(data.workspace ? { workspace: data.workspace } : {}),
        ownerEmail: data.ownerEmail,
        ownerName: data.ownerName,
        tier: data.tier,
        erpVersion: data.erpVersion,
      }),
      signal: AbortSignal.timeout(15_000),
    });
  } catch (err) {
    throw new Error(`account API unreachable at ${cfg.ACCOUNT_API_URL}: ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => ({}))) as { detail?: string; created?: boolean };
  if (res.status === 200 || res.status === 201) {
    log.info({ tenant: data.tenant, created: body.created === true }, 'workspace entry in place');
    return true;
  }
  if (res.status === 400 || res.status === 422) {
    log.error(
      { tenant: data.tenant, status: res.status, detail: body.detail },
      'account API refused the provisioning callback for good',
    );
    return false;
  }
  throw new Error(`account API answered ${res.status} to the provisioning callback: ${body.detail ?? 'no detail'}`);
}

export async function startProvisionedConsumer(cfg: Config = loadConfig(), opts: { consumer?: string } = {}) {
  const log = createLogger({ name: 'provisioned-consumer', level: cfg.LOG_LEVEL });
  const redis = new Redis(cfg.REDIS_URL, { maxRetriesPerRequest: 2 });
  const pool = createPool(cfg.DATABASE_URL, 2);
  const secrets = createSecretStore(cfg, pool);
  const temporal = await connectTemporal(cfg);
  const consumer = opts.consumer ?? `${hostname()}-${process.pid}`;

  async function handleProvisioned(event: CloudEvent) {
    const problems = dataProblems(event.data);
    if (problems.length > 0) {
      log.error({ eventId: event.id, problems }, 'client.provisioned event without usable data; skipped');
      return;
    }
    const data = event.data as ClientProvisionedData;
    if (!(await createWorkspaceEntry(cfg, secrets, data, log))) return;
    const welcome = await startFirstWelcomeEmail({ pool, temporal, taskQueue: cfg.TEMPORAL_TASK_QUEUE }, data.tenant);
    log.info(
      { eventId: event.id, tenant: data.tenant, workflowId: welcome.workflowId, started: welcome.started },
      welcome.started ? 'welcome e-mail started' : 'welcome e-mail had been started before',
    );
  }

  // in the trace of the provisioning that published the event (its `traceparent`), when it carries one
  const handle = async (event: CloudEvent) => {
    if (event.type !== CLIENT_PROVISIONED) return;
    await inTraceOf(traceOf(event), () =>
      inChildSpan(`handle ${CLIENT_PROVISIONED}`, { 'cloudevents.event_id': event.id }, () => handleProvisioned(event)),
    );
  };

  const controller = new AbortController();
  const running = runConsumer({
    redis,
    stream: cfg.EVENTS_STREAM,
    group: PROVISIONING_GROUP,
    consumer,
    handle,
    claimIdleMs: cfg.EVENTS_CLAIM_IDLE_MS,
    signal: controller.signal,
    log,
  });
  log.info({ stream: cfg.EVENTS_STREAM, group: PROVISIONING_GROUP, consumer }, 'consuming client.provisioned');
  // the group's pending entries and lag in the queue gauges (lib/metrics.ts)
  const unwatch = watchStreamGroup({ redis, stream: cfg.EVENTS_STREAM, group: PROVISIONING_GROUP });

  return {
    consumer,
    async close() {
      controller.abort();
      unwatch();
      await running;
      await temporal.connection.close();
      await pool.end();
      redis.disconnect();
    },
  };
}

await runAsMain(import.meta.url, 'provisioned-consumer', () => startProvisionedConsumer());
