/**
 * The events service over real HTTP on the run's real Redis: publishing CloudEvents onto the
 * stream, validation, authentication, de-duplication, trimming, consumer groups and info.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startEvents } from '../../services/events/server.js';
import { freePort } from '../../scripts/local-servers.js';
import { cloudEvent, publishEvent, EventsServiceError } from '../../domain/events/events.js';
import type { Config } from '../../lib/config.js';
import { testConfig } from '../support/env.js';
import { testKeys } from '../support/service-keys.js';

type Events = Awaited<ReturnType<typeof startEvents>>;

let cfg: Config;
let events: Events;
let redis: Redis;

async function eventsConfig(overrides: Record<string, string> = {}): Promise<Config> {
  const port = await freePort();
  return testConfig({
    EVENTS_PORT: String(port),
    EVENTS_URL: `http://127.0.0.1:${port}`,
    EVENTS_STREAM: `events-test-${randomUUID().slice(0, 8)}`,
    ...overrides,
  });
}

const anEvent = (overrides: Record<string, unknown> = {}) => ({
  specversion: '1.0',
  id: randomUUID(),
  source: '/plana/tests',
  type: 'test.happened',
  subject: 'acme',
  time: '2026-01-31T12:00:00Z',
  datacontenttype: 'application/json',
  data: { tenant: 'acme', n: 1 },
  ...overrides,
});

function post(path: string, body: unknown, headers: Record<string, string> = {}, c: Config = cfg) {
  return fetch(`${c.EVENTS_URL}${path}`, {
    method: 'POST',
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/cloudevents+json' } : {}),
      'x-api-key': testKeys.events,
      ...headers,
    },
    body: body === undefined || typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const get = (path: string, headers: Record<string, string> = { 'x-api-key': testKeys.events }) =>
  fetch(`${cfg.EVENTS_URL}${path}`, { headers });

beforeAll(async () => {
  cfg = await eventsConfig();
  events = await startEvents(cfg);
  redis = new Redis(cfg.REDIS_URL);
});

afterAll(async () => {
  await events?.close();
  redis?.disconnect();
});

describe('POST /api/v1/events', () => {
  it('accepts a CloudEvent with 202 and appends the whole envelope to the stream', async () => {
    const ev = anEvent();
    const res = await post('/api/v1/events', ev);
    expect(res.status).toBe(202);
    const body = await res.json();
    expect(body).toEqual({ streamId: expect.stringMatching(/^\d+-\d+$/), duplicate: false });

    const entries = await redis.xrange(cfg.EVENTS_STREAM, body.streamId, body.streamId);
    expect(entries).toHaveLength(1);
    const fields = entries[0]![1];
    const asObject = Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : [])));
    expect(asObject.id).toBe(ev.id);
    expect(asObject.type).toBe('test.happened');
    expect(JSON.parse(asObject.event!)).toEqual(ev);
  });

  it('accepts plain application/json as well, and publishEvent() uses the service over HTTP', async () => {
    const res = await post('/api/v1/events', anEvent(), { 'content-type': 'application/json' });
    expect(res.status).toBe(202);
    const published = await publishEvent(
      { eventsUrl: cfg.EVENTS_URL, apiKey: testKeys.events },
      cloudEvent({ id: randomUUID(), source: '/plana/tests', type: 'test.helper', data: { ok: true } }),
    );
    expect(published.duplicate).toBe(false);
    const [entry] = await redis.xrange(cfg.EVENTS_STREAM, published.streamId, published.streamId);
    expect(entry?.[1]).toContain('test.helper');
  });

  it('stores a retried publish (same source and id) once and answers with the first stream id', async () => {
    const ev = anEvent();
    const before = await redis.xlen(cfg.EVENTS_STREAM);
    const first = await (await post('/api/v1/events', ev)).json();
    const second = await post('/api/v1/events', ev);
    expect(second.status).toBe(202);
    expect(await second.json()).toEqual({ streamId: first.streamId, duplicate: true });
    // the same id from another source is another event
    const other = await (await post('/api/v1/events', { ...ev, source: '/plana/other' })).json();
    expect(other.duplicate).toBe(false);
    expect(await redis.xlen(cfg.EVENTS_STREAM)).toBe(before + 2);
  });

  it.each([
    ['no specversion', { specversion: undefined }, ['specversion is required']],
    ['a wrong specversion', { specversion: '0.3' }, ['specversion must be "1.0" (got "0.3")']],
    [
      'no id, source or type',
      { id: undefined, source: undefined, type: undefined },
      ['id is required', 'source is required', 'type is required'],
    ],
    [
      'an empty id and a numeric type',
      { id: '', type: 42 },
      ['id must be a non-empty string', 'type must be a non-empty string'],
    ],
    [
      'a time that is not RFC 3339',
      { time: 'yesterday' },
      ['time must be an RFC 3339 timestamp, e.g. 2026-01-31T12:00:00Z'],
    ],
    [
      'a badly named extension',
      { 'Trace-Id': 'x' },
      ['extension attribute "Trace-Id" must be named with 1-20 lower-case letters or digits'],
    ],
  ])('answers 400 with one reason per problem for %s, and appends nothing', async (_label, change, reasons) => {
    const before = await redis.xlen(cfg.EVENTS_STREAM);
    const res = await post('/api/v1/events', anEvent(change));
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const problem = await res.json();
    expect(problem).toMatchObject({ status: 400, code: 'BAD_REQUEST', errors: reasons });
    for (const reason of reasons) expect(problem.detail).toContain(reason);
    expect(await redis.xlen(cfg.EVENTS_STREAM)).toBe(before);
  });

  it('answers 400 for a body that is not a JSON object or not JSON at all', async () => {
    const array = await post('/api/v1/events', [anEvent()]);
    expect(array.status).toBe(400);
    expect((await array.json()).errors).toEqual([
      'the body must be a JSON object (a CloudEvents 1.0 envelope in structured mode)',
    ]);
    const broken = await post('/api/v1/events', '{"specversion": "1.0",');
    expect(broken.status).toBe(400);
    expect((await broken.json()).code).toBe('BAD_REQUEST');
  });

  it('answers 415 for a body that is not JSON', async () => {
    const res = await post('/api/v1/events', 'specversion=1.0', { 'content-type': 'text/plain' });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it.each([
    ['no key', {}],
    ['a wrong key', { 'x-api-key': 'not-the-events-key-000000000000' }],
  ])('answers 401 with %s and appends nothing', async (_label, headers: Record<string, string>) => {
    const before = await redis.xlen(cfg.EVENTS_STREAM);
    const res = await fetch(`${cfg.EVENTS_URL}/api/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(anEvent()),
    });
    expect(res.status).toBe(401);
    const problem = await res.json();
    expect(problem.code).toBe('UNAUTHORIZED');
    expect(JSON.stringify(problem)).not.toContain('not-the-events-key');
    expect(await redis.xlen(cfg.EVENTS_STREAM)).toBe(before);
    expect((await get('/api/v1/events/info', headers)).status).toBe(401);
    expect((await get('/api/v1/status', headers)).status).toBe(401);
  });

  it('publishEvent() reports what the service answered when it refuses an event', async () => {
    const refused = publishEvent(
      { eventsUrl: cfg.EVENTS_URL, apiKey: 'wrong-key-0000000000000000' },
      cloudEvent({ id: 'x', source: '/t', type: 't' }),
    );
    await expect(refused).rejects.toBeInstanceOf(EventsServiceError);
    await expect(refused).rejects.toMatchObject({ status: 401 });
    await expect(
      publishEvent({ eventsUrl: 'http://127.0.0.1:1', apiKey: 'k' }, cloudEvent({ id: 'x', source: '/t', type: 't' })),
    ).rejects.toThrow(/events service unreachable/);
  });
});

describe('bounded trimming', () => {
  it('keeps the stream near EVENTS_STREAM_MAXLEN however many events are published', async () => {
    const small = await eventsConfig({ EVENTS_STREAM_MAXLEN: '50' });
    const svc = await startEvents(small);
    try {
      const ids: string[] = [];
      for (let i = 0; i < 400; i += 20) {
        const batch = await Promise.all(
          Array.from({ length: 20 }, () => post('/api/v1/events', anEvent(), {}, small).then((r) => r.json())),
        );
        ids.push(...batch.map((b) => b.streamId as string));
      }
      const length = await redis.xlen(small.EVENTS_STREAM);
      // MAXLEN ~ trims whole macro nodes (100 entries each by default): at least 50 are kept, never 400
      expect(length).toBeGreaterThanOrEqual(50);
      expect(length).toBeLessThanOrEqual(150);
      const [first] = await redis.xrange(small.EVENTS_STREAM, '-', '+', 'COUNT', 1);
      expect(ids.slice(0, 100)).not.toContain(first![0]);
    } finally {
      await svc.close();
    }
  });
});

describe('consumer groups and info', () => {
  it('creates a group once: 201 the first time, 200 after, and info shows its lag and pending entries', async () => {
    const c = await eventsConfig();
    const svc = await startEvents(c);
    try {
      const emptyInfo = await (
        await fetch(`${c.EVENTS_URL}/api/v1/events/info`, { headers: { 'x-api-key': testKeys.events } })
      ).json();
      expect(emptyInfo).toMatchObject({ stream: c.EVENTS_STREAM, length: 0, firstId: null, lastId: null, groups: [] });

      const published: string[] = [];
      for (let i = 0; i < 3; i++)
        published.push((await (await post('/api/v1/events', anEvent(), {}, c)).json()).streamId);

      const created = await post('/api/v1/events/groups/billing?startId=0', undefined, {}, c);
      expect(created.status).toBe(201);
      expect(await created.json()).toEqual({ stream: c.EVENTS_STREAM, group: 'billing', created: true, startId: '0' });
      const again = await post('/api/v1/events/groups/billing', undefined, {}, c);
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({ stream: c.EVENTS_STREAM, group: 'billing', created: false });
      expect((await post('/api/v1/events/groups/only-new', undefined, {}, c)).status).toBe(201);

      // a consumer reads two entries and does not acknowledge them yet
      await redis.xreadgroup('GROUP', 'billing', 'worker-1', 'COUNT', 2, 'STREAMS', c.EVENTS_STREAM, '>');

      const info = await (
        await fetch(`${c.EVENTS_URL}/api/v1/events/info`, { headers: { 'x-api-key': testKeys.events } })
      ).json();
      expect(info).toMatchObject({ length: 3, firstId: published[0], lastId: published[2], entriesAdded: 3 });
      const billing = info.groups.find((g: { name: string }) => g.name === 'billing');
      expect(billing).toMatchObject({ lag: 1, pending: 2, lastDeliveredId: published[1] });
      expect(billing.consumers).toEqual([{ name: 'worker-1', pending: 2, idleMs: expect.any(Number) }]);
      expect(info.groups.find((g: { name: string }) => g.name === 'only-new')).toMatchObject({
        lag: 0,
        pending: 0,
        consumers: [],
      });
    } finally {
      await svc.close();
    }
  });

  it('refuses a group name or start id that Redis would not take, with 400', async () => {
    const bad = await post('/api/v1/events/groups/has%20space', undefined);
    expect(bad.status).toBe(400);
    const badStart = await post('/api/v1/events/groups/ok?startId=yesterday', undefined);
    expect(badStart.status).toBe(400);
    expect((await badStart.json()).detail).toContain('startId');
  });
});

describe('probes and status', () => {
  it('answers /healthz and /readyz without a key, and /api/v1/status with one', async () => {
    expect(await (await get('/healthz', {})).json()).toEqual({ status: 'ok' });
    expect(await (await get('/readyz', {})).json()).toEqual({ status: 'ready' });
    const status = await (await get('/api/v1/status')).json();
    expect(status).toMatchObject({
      service: 'events',
      status: 'ok',
      stream: cfg.EVENTS_STREAM,
      redis: 'ok',
      maxLen: cfg.EVENTS_STREAM_MAXLEN,
    });
  });
});
