/**
 * A platform server's log lines never carry a request's or response's credentials, whatever a route
 * logs under `req` or `res`: the serializers reduce them to method and URL (credentials in the URL
 * redacted) and to the status code, and the named paths (`headers.authorization`, `password`, …)
 * are replaced. A Fastify app with the platform's server options, logging to a stream read here.
 */
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { problemDetails, serverOptions } from '../../lib/http.js';

const SECRETS = ['Bearer s3cret-bearer-token', 'sid=s3cret-session', 'hunter2-password', 's3cret-query-token'];

/** A stream that keeps every log line written to it. */
function lineSink(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, stream };
}

async function linesOf(log: (req: { log: { info(obj: object, msg: string): void } }) => void): Promise<string[]> {
  const { lines, stream } = lineSink();
  const app = Fastify(serverOptions('info', { stream }));
  await app.register(problemDetails);
  app.get('/t', async (req) => {
    log(req);
    return { ok: true };
  });
  const res = await app.inject({
    method: 'GET',
    url: '/t?access_token=s3cret-query-token',
    headers: { authorization: 'Bearer s3cret-bearer-token', cookie: 'sid=s3cret-session' },
  });
  await app.close();
  // a credential in the query is the account API's 400 (api/plugins/query-credentials.ts); this bare app answers
  expect(res.statusCode).toBe(200);
  return lines;
}

describe("a server's log lines", () => {
  it('hold no header, cookie or URL credential of the request or its answer, whatever is logged under req and res', async () => {
    const lines = await linesOf((req) =>
      req.log.info(
        {
          req: {
            method: 'GET',
            url: '/t?access_token=s3cret-query-token',
            headers: { ...(req as never as { headers: object }).headers },
          },
          res: { statusCode: 200, headers: { 'set-cookie': 'sid=s3cret-session' } },
        },
        'a route logging its request and answer',
      ),
    );
    const logged = lines.find((l) => l.includes('a route logging'));
    expect(logged).toBeDefined();
    expect(JSON.parse(logged!)).toMatchObject({
      req: { method: 'GET', url: '/t?access_token=[redacted]' },
      res: { statusCode: 200 },
    });
    const completed = lines.find((l) => l.includes('request completed'));
    expect(JSON.parse(completed!)).toMatchObject({
      req: { url: '/t?access_token=[redacted]' },
      res: { statusCode: 200 },
    });
    for (const line of lines) for (const secret of SECRETS) expect(line).not.toContain(secret);
  });

  it('redact the URL of every request, the same URL repeated or not (each distinct clean URL is scanned once)', async () => {
    const { lines, stream } = lineSink();
    const app = Fastify(serverOptions('info', { stream }));
    await app.register(problemDetails);
    app.get('/t/:id', async () => ({ ok: true }));
    const urls = ['/t/1?page=2', '/t/1?page=2', '/t/ws_live_ABCDEFGH12345678?token=s3cret-query-token'];
    for (const url of [...urls, ...urls]) expect((await app.inject({ method: 'GET', url })).statusCode).toBe(200);
    await app.close();
    const logged = lines.filter((l) => l.includes('request completed')).map((l) => JSON.parse(l).req.url);
    const redacted = ['/t/1?page=2', '/t/1?page=2', '/t/ws_live_ABCDEFGH[redacted]?token=[redacted]'];
    expect(logged).toEqual([...redacted, ...redacted]);
  });

  it('replace the named paths: headers and credentials logged at the top level or in a body', async () => {
    const lines = await linesOf((req) =>
      req.log.info(
        {
          headers: { authorization: 'Bearer s3cret-bearer-token', 'x-api-key': 's3cret-query-token' },
          password: 'hunter2-password',
          body: { password: 'hunter2-password' },
        },
        'a route logging credentials',
      ),
    );
    const logged = JSON.parse(lines.find((l) => l.includes('a route logging'))!);
    expect(logged).toMatchObject({
      headers: { authorization: '[redacted]', 'x-api-key': '[redacted]' },
      password: '[redacted]',
      body: { password: '[redacted]' },
    });
    for (const line of lines) for (const secret of SECRETS) expect(line).not.toContain(secret);
  });
});
