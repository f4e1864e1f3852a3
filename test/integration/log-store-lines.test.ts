/**
 * Every service's log lines in the log store (the run's real VictoriaLogs): with LOG_STORE_URL in
 * its environment a platform server sends its lines there too, under its service name, redacted as
 * standard output has them; a store that is down costs the service nothing, and what could not be
 * sent is counted.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import client from 'prom-client';
import { LogShipper } from '../../lib/log-shipper.js';
import { queryLogs } from '../../lib/log-store.js';
import { buildServiceApp, type ServiceApp } from '../../lib/service-app.js';
import { freePort } from '../../scripts/local-servers.js';

const storeUrl = inject('logStoreUrl');
let app: ServiceApp | undefined;

afterEach(async () => {
  delete process.env.LOG_STORE_URL;
  await app?.close();
  app = undefined;
});

/** A service of the platform's frame whose route logs what a careless route might. */
async function serviceLogging(service: string) {
  app = await buildServiceApp('info', { service });
  app.get('/t', async (req) => {
    req.log.info({ password: 'hunter2-password', token: 's3cret-token' }, 'a careless line');
    return { ok: true };
  });
  await app.listen({ port: await freePort(), host: '127.0.0.1' });
  return `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
}

const droppedLines = async (service: string, reason: string) => {
  const metric = await client.register.getSingleMetric('plana_log_lines_dropped_total')!.get();
  return metric.values.find((v) => v.labels.service === service && v.labels.reason === reason)?.value ?? 0;
};

describe("a service's log lines", () => {
  it('reach the log store under the service name, redacted as on standard output', async () => {
    process.env.LOG_STORE_URL = storeUrl;
    const service = `lines-${randomUUID().slice(0, 8)}`;
    const base = await serviceLogging(service);
    // a request id is a trace id's shape (lib/http-server-options.ts)
    const requestId = randomUUID().replaceAll('-', '');
    const res = await fetch(`${base}/t?access_token=s3cret-query-token`, {
      headers: { authorization: 'Bearer s3cret-bearer', 'x-request-id': requestId },
    });
    expect(res.status).toBe(200);

    let lines: Record<string, string>[] = [];
    await vi.waitFor(
      async () => {
        lines = await queryLogs(storeUrl, `{service="${service}"} _time:5m`, 100);
        expect(lines.map((l) => l._msg)).toEqual(expect.arrayContaining(['a careless line', 'request completed']));
      },
      { timeout: 15_000, interval: 250 },
    );
    const careless = lines.find((l) => l._msg === 'a careless line')!;
    expect(careless).toMatchObject({ service, password: '[redacted]', token: '[redacted]', reqId: requestId });
    expect(Math.abs(Date.parse(careless._time!) - Date.now())).toBeLessThan(60_000);
    const all = JSON.stringify(lines);
    for (const secret of ['hunter2-password', 's3cret-token', 's3cret-query-token', 's3cret-bearer'])
      expect(all).not.toContain(secret);
  });

  it('cost the service nothing while the store is down: answered as usual, the lines counted as dropped', async () => {
    process.env.LOG_STORE_URL = `http://127.0.0.1:${await freePort()}`;
    const service = `lines-${randomUUID().slice(0, 8)}`;
    const base = await serviceLogging(service);
    const started = Date.now();
    for (let i = 0; i < 20; i++) expect((await fetch(`${base}/t`)).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5_000);
    await vi.waitFor(async () => expect(await droppedLines(service, 'store_unreachable')).toBeGreaterThanOrEqual(40), {
      timeout: 10_000,
    });
  });

  it('wait in a bounded buffer: past it a line is dropped and counted, not held', () => {
    const service = `lines-${randomUUID().slice(0, 8)}`;
    const shipper = new LogShipper('http://127.0.0.1:1', service, { maxLines: 10, batchLines: 1_000, flushMs: 60_000 });
    for (let i = 0; i < 25; i++) shipper.write(`{"msg":"line ${i}"}\n`);
    shipper.close();
    return expect(droppedLines(service, 'buffer_full')).resolves.toBe(15);
  });
});
