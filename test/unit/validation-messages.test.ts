/**
 * Schema-validation errors in words (lib/validation-messages.ts), as a platform server answers
 * them: a Fastify app with the platform's options and error handling (lib/http.ts), a route with
 * the schema, and the problem's `errors`.
 */
import Fastify from 'fastify';
import { Type, type TSchema } from 'typebox';
import { describe, expect, it } from 'vitest';
import { problemDetails, serverOptions } from '../../lib/http.js';

async function problems(schema: TSchema, data: Record<string, unknown>, part: 'body' | 'query' | 'params' = 'body') {
  const app = Fastify(serverOptions('silent'));
  await app.register(problemDetails);
  const route =
    part === 'params'
      ? `/t/${Object.keys(data)
          .map((k) => `:${k}`)
          .join('/')}`
      : '/t';
  app.route({
    method: part === 'body' ? 'POST' : 'GET',
    url: route,
    schema: { [part === 'query' ? 'querystring' : part]: schema },
    handler: async () => ({}),
  });
  const url =
    part === 'params'
      ? `/t/${Object.values(data)
          .map((v) => encodeURIComponent(String(v)))
          .join('/')}`
      : part === 'query'
        ? `/t?${new URLSearchParams(data as Record<string, string>)}`
        : '/t';
  const res = await app.inject({
    method: part === 'body' ? 'POST' : 'GET',
    url,
    ...(part === 'body' ? { payload: data } : {}),
  });
  await app.close();
  expect(res.statusCode).toBe(400);
  const body = res.json();
  // the detail is the same sentences, one per field
  expect(body.detail).toBe(
    body.errors.map((e: { field: string; message: string }) => `${e.field} ${e.message}.`).join(' '),
  );
  return body.errors;
}

describe('describeValidation', async () => {
  it('an anyOf: the alternative the caller meant, not every alternative', async () => {
    const replay = Type.Union([
      Type.Object({ messageId: Type.String({ pattern: '^msg_' }) }, { additionalProperties: false }),
      Type.Object(
        { since: Type.String({ format: 'date-time' }), until: Type.Optional(Type.String({ format: 'date-time' })) },
        { additionalProperties: false },
      ),
    ]);
    expect(await problems(replay, { since: 'yesterday' })).toEqual([
      {
        field: 'body.since',
        message: 'must be a date and time (RFC 3339, e.g. 2026-01-31T09:00:00Z), not "yesterday"',
      },
    ]);
    expect(await problems(replay, { messageId: 'x' })).toEqual([
      { field: 'body.messageId', message: 'is not in the accepted format: "x"' },
    ]);
  });

  it('an anyOf sent with the fields of two alternatives: the field that does not go with the one that fits', async () => {
    const replay = Type.Union([
      Type.Object({ messageId: Type.String({ pattern: '^msg_' }) }, { additionalProperties: false }),
      Type.Object(
        { since: Type.String({ format: 'date-time' }), until: Type.Optional(Type.String({ format: 'date-time' })) },
        { additionalProperties: false },
      ),
    ]);
    // messageId is a field of this request, and a good one: the problem is `since`
    expect(await problems(replay, { messageId: 'msg_1', since: 'x' })).toEqual([
      {
        field: 'body.since',
        message: 'cannot be sent with messageId: the request takes messageId, or since (and until)',
      },
    ]);
    expect(
      await problems(replay, { since: '2026-01-31T09:00:00Z', until: '2026-02-01T09:00:00Z', messageId: 'x' }),
    ).toEqual([
      {
        field: 'body.messageId',
        message: 'cannot be sent with since and until: the request takes messageId, or since (and until)',
      },
    ]);
  });

  it('a union of constants reads as one list; a union of types as one type', async () => {
    expect(
      await problems(
        Type.Object({ view: Type.Union([Type.Literal('summary'), Type.Literal('full')]) }),
        { view: 'all' },
        'query',
      ),
    ).toEqual([{ field: 'query.view', message: 'must be one of "summary", "full", not "all"' }]);
    expect(await problems(Type.Object({ note: Type.Union([Type.String(), Type.Null()]) }), { note: 5 })).toEqual([
      { field: 'body.note', message: 'must be text or null, not 5' },
    ]);
  });

  it('a short enum is listed; a long one is not: its title and where the list is instead', async () => {
    expect(await problems(Type.Object({ tier: Type.String({ enum: ['starter', 'pro'] }) }), { tier: 'gold' })).toEqual([
      { field: 'body.tier', message: 'must be one of "starter", "pro", not "gold"' },
    ]);
    const zones = Intl.supportedValuesOf('timeZone');
    const [p] = await problems(
      Type.Object({ timeZone: Type.String({ enum: zones, title: 'an IANA time zone name such as Europe/Zurich' }) }),
      { timeZone: 'CEST' },
    );
    expect(p!.message).toBe(
      `must be an IANA time zone name such as Europe/Zurich, not "CEST" (${zones.length} values are accepted; the API document at /docs lists them)`,
    );
    expect(p!.message.length).toBeLessThan(200);
  });

  it('a pattern is described by its title, never shown as a regular expression', async () => {
    const name = Type.String({
      pattern: '^[a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?$',
      title: 'a DNS label: lowercase letters a-z, digits and hyphens',
    });
    expect(await problems(Type.Object({ name }), { name: 'NoSuch' }, 'params')).toEqual([
      { field: 'params.name', message: 'must be a DNS label: lowercase letters a-z, digits and hyphens, not "NoSuch"' },
    ]);
  });

  it('bounds, missing and unknown fields in words; list items by index', async () => {
    const schema = Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 5 }),
        scopes: Type.Array(Type.String({ maxLength: 3 }), { minItems: 1 }),
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
      },
      { additionalProperties: false },
    );
    expect(await problems(schema, { name: '', scopes: [], limit: 0, extra: 1 })).toEqual([
      { field: 'body.extra', message: 'is not a field of this request; the fields are name, scopes, limit' },
      { field: 'body.name', message: 'must not be empty' },
      { field: 'body.scopes', message: 'must have at least one item' },
      { field: 'body.limit', message: 'must be at least 1, not 0' },
    ]);
    expect(await problems(schema, { scopes: ['abcd'] })).toEqual([
      { field: 'body.name', message: 'is required' },
      { field: 'body.scopes[0]', message: 'must be at most 3 characters long (it has 4)' },
    ]);
  });
});
