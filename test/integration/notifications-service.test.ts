/** The notifications service over real HTTP, with real Redis and a real SMTP server (the sink). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNotifications } from '../../services/notifications/server.js';
import { readMailbox, startSmtpSink, type SmtpSink } from '../../sandbox/smtp/sink.js';
import type { Config } from '../../lib/config.js';
import { tempDir, testConfig } from '../support/env.js';
import { testKeys } from '../support/service-keys.js';
import { randomBytes } from 'node:crypto';
import { createPool } from '../../lib/db.js';
import { createKey } from '../../domain/service-keys/key-registry.js';

let cfg: Config;
let sink: SmtpSink;
let svc: Awaited<ReturnType<typeof startNotifications>>;
/** A second live key for the pair, as during a rotation (registered pending for a caller of this file's own). */
let previousKey: string;

const post = (path: string, body: unknown, headers: Record<string, string> = { 'x-api-key': testKeys.notifications }) =>
  fetch(`${cfg.NOTIFICATIONS_URL}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });

const mailTo = (address: string) => readMailbox(sink.dir).filter((m) => m.to.includes(address));

beforeAll(async () => {
  cfg = await testConfig();
  const pool = createPool(cfg.DATABASE_URL, 1);
  const caller = `test-${randomBytes(3).toString('hex')}`;
  await createKey(pool, { caller, target: 'notifications' }, 'current');
  previousKey = (await createKey(pool, { caller, target: 'notifications' }, 'pending')).key;
  await pool.end();
  sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: tempDir('mail') });
  svc = await startNotifications(cfg);
});

afterAll(async () => {
  await svc?.close();
  await sink?.close();
});

describe('POST /v1/welcome', () => {
  it('sends the welcome e-mail over SMTP', async () => {
    const res = await post('/v1/welcome', { email: 'first@acme.test', workspace: 'acme' });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'sent' });
    const [mail] = mailTo('first@acme.test');
    expect(mail?.subject).toBe('Welcome to Plana: your workspace "acme" is ready');
    expect(mail?.headers['x-plana-workspace']).toBe('acme');
  });

  it('accepts both keys while a rotation has two live', async () => {
    const res = await post(
      '/v1/welcome',
      { email: 'rotating@acme.test', workspace: 'acme' },
      { 'x-api-key': previousKey },
    );
    expect(res.status).toBe(200);
  });

  it.each([
    ['no key', {}],
    ['a wrong key', { 'x-api-key': 'wrong-key-00000000000000000000' }],
  ])('answers 401 with %s and sends nothing', async (_l, headers: Record<string, string>) => {
    const res = await post('/v1/welcome', { email: 'nokey@acme.test', workspace: 'acme' }, headers);
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    const body = await res.json();
    expect(body).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    expect(JSON.stringify(body)).not.toContain('wrong-key');
    expect(mailTo('nokey@acme.test')).toHaveLength(0);
  });

  it.each([
    ['a missing workspace', { email: 'a@acme.test' }, 'body.workspace'],
    ['an invalid e-mail', { email: 'not-an-email', workspace: 'acme' }, 'body.email'],
    [
      'an unknown field',
      { email: 'a@acme.test', workspace: 'acme', cc: 'x@y.z' },
      'body.cc is not a field of this request',
    ],
  ])('answers 400 naming the problem for %s', async (_l, body, expected) => {
    const res = await post('/v1/welcome', body);
    expect(res.status).toBe(400);
    const problem = await res.json();
    expect(problem).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
    expect(problem.detail).toContain(expected);
  });

  it('answers 400 for a body that is not JSON', async () => {
    const res = await post('/v1/welcome', '{"email":');
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe('BAD_REQUEST');
  });

  it('sends once per Idempotency-Key, however often the call is repeated', async () => {
    const headers = { 'x-api-key': testKeys.notifications, 'idempotency-key': 'welcome:idem:1' };
    const first = await (await post('/v1/welcome', { email: 'idem@acme.test', workspace: 'acme' }, headers)).json();
    const second = await (await post('/v1/welcome', { email: 'idem@acme.test', workspace: 'acme' }, headers)).json();
    expect(first.status).toBe('sent');
    expect(second).toEqual({ status: 'duplicate', messageId: first.messageId });
    expect(mailTo('idem@acme.test')).toHaveLength(1);
  });
});

describe('POST /v1/email and /v1/alert', () => {
  it('sends a plain e-mail', async () => {
    const res = await post('/v1/email', { to: 'plain@acme.test', subject: 'Invoice ready', text: 'See attachment.' });
    expect(res.status).toBe(200);
    expect(mailTo('plain@acme.test')[0]?.subject).toBe('Invoice ready');
  });

  it('sends an alert with its severity in the subject', async () => {
    const res = await post('/v1/alert', {
      to: 'ops@acme.test',
      severity: 'critical',
      title: 'Backup failed',
      message: 'acme',
    });
    expect(res.status).toBe(200);
    expect(mailTo('ops@acme.test')[0]?.subject).toBe('[CRITICAL] Backup failed');
  });
});

describe('GET /healthz', () => {
  it('answers without a key', async () => {
    const res = await fetch(`${cfg.NOTIFICATIONS_URL}/healthz`);
    expect(await res.json()).toEqual({ status: 'ok' });
  });
});

describe('when the mail relay is down', () => {
  it('answers 502 and lets the same Idempotency-Key send once the relay is back', async () => {
    await sink.close();
    const headers = { 'x-api-key': testKeys.notifications, 'idempotency-key': 'welcome:relay-down:1' };
    const down = await post('/v1/welcome', { email: 'relay@acme.test', workspace: 'acme' }, headers);
    expect(down.status).toBe(502);
    const problem = await down.json();
    expect(problem.code).toBe('BAD_GATEWAY');

    sink = await startSmtpSink({ port: cfg.SMTP_PORT, dir: sink.dir });
    const up = await post('/v1/welcome', { email: 'relay@acme.test', workspace: 'acme' }, headers);
    expect(up.status).toBe(200);
    expect((await up.json()).status).toBe('sent');
    expect(mailTo('relay@acme.test')).toHaveLength(1);
  });
});
