/**
 * The service keys tests send as the platform's consumers would. Global setup bootstraps them
 * once per run (domain/service-keys/bootstrap.ts: generated, registered `current` at the target,
 * stored in the secret store) and provides the current ones here; the services under test read the
 * registry and the secret store themselves. Nothing in configuration holds a key.
 */
import Fastify from 'fastify';
import type pg from 'pg';
import { inject } from 'vitest';
import { registerServiceKeyCheck, requireServiceKey } from '../../domain/service-keys/service-key-auth.js';
import { ServiceKeyVerifier } from '../../domain/service-keys/verifier.js';

export const testKeys = {
  /** operator → account-api (the ops routes) */
  get operator() {
    return inject('serviceKeys').operator;
  },
  /** provisioning → account-api (POST /api/webhooks/provisioned) */
  get provisioning() {
    return inject('serviceKeys').provisioning;
  },
  /** worker → events */
  get events() {
    return inject('serviceKeys').events;
  },
  /** worker → notifications */
  get notifications() {
    return inject('serviceKeys').notifications;
  },
};

/**
 * A target of a test's own: a tiny HTTP service that checks `X-API-Key` with the shared
 * ServiceKeyVerifier (usage flushed every 100 ms), as every platform service does. `GET /ping`
 * answers 200 with the caller's key id, or 401; `GET /.well-known/service-key` is the check route
 * every platform service serves. `answered` counts its answers by status.
 */
export async function startKeyCheckedTarget(pool: pg.Pool, target: string) {
  const verifier = await ServiceKeyVerifier.start({ target, pool, refreshMs: 60_000, usageFlushMs: 100 });
  const check = requireServiceKey(verifier);
  const app = Fastify();
  /** What the target answered, per status (a failed call is anything but 200). */
  const answered = new Map<number, number>();
  app.addHook('onResponse', async (_req, reply) => {
    answered.set(reply.statusCode, (answered.get(reply.statusCode) ?? 0) + 1);
  });
  // where consumer processes report the key they hold (domain/service-keys/holders.ts)
  registerServiceKeyCheck(app, verifier);
  app.get('/ping', {
    onRequest: async (req, reply) => {
      try {
        await check(req, reply);
      } catch {
        return reply.code(401).send({ status: 401 });
      }
    },
    handler: async (req) => ({ ok: true, keyId: req.serviceCaller?.keyId }),
  });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    verifier,
    url,
    answered,
    ping: (key: string) => fetch(`${url}/ping`, { headers: { 'x-api-key': key } }),
    async close() {
      await app.close();
      await verifier.close();
    },
  };
}

/**
 * A consumer calling `ping` back to back until stopped; `key()` is what it sends each time (read
 * from the secret store, as a real consumer does). Counts the calls and the failed ones.
 */
export function keyConsumer(ping: (key: string) => Promise<Response>, key: () => Promise<string>, seen?: Set<string>) {
  let stop = false;
  const counts = { calls: 0, failed: 0, statuses: new Set<number>() };
  const running = (async () => {
    while (!stop) {
      const k = await key();
      seen?.add(k);
      const res = await ping(k).catch(() => undefined);
      counts.calls++;
      await res?.arrayBuffer();
      if (res?.status !== 200) {
        counts.failed++;
        counts.statuses.add(res?.status ?? 0);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return {
    counts,
    async stop() {
      stop = true;
      await running;
      return counts;
    },
  };
}
