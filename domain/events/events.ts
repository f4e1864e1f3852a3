/**
 * Events for the rest of the platform (specification §6, DESIGN §5): CloudEvents 1.0 envelopes
 * (structured JSON mode), published through the events service over HTTP and read from its Redis
 * stream with a consumer group (./consumer.ts).
 *
 * Delivery is at least once: a consumer acknowledges an entry only after its handler succeeded;
 * an entry whose consumer died (or whose handler failed) stays pending and is reclaimed with
 * XAUTOCLAIM once it has been idle for `claimIdleMs`. Handlers must therefore be idempotent.
 */

/** A CloudEvents 1.0 envelope in structured JSON mode. */
export interface CloudEvent<T = unknown> {
  specversion: '1.0';
  /** Unique per `source`; a publish repeated with the same source and id is stored once. */
  id: string;
  /** URI-reference naming the producer, e.g. `/plana/tenant-lifecycle`. */
  source: string;
  /** Reverse-DNS-like event type, e.g. `client.provisioned`. */
  type: string;
  subject?: string;
  /** RFC 3339 timestamp. */
  time?: string;
  datacontenttype?: string;
  dataschema?: string;
  data?: T;
  data_base64?: string;
  /** Extension attributes (lower-case letters and digits, at most 20 characters). */
  [extension: string]: unknown;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const EXTENSION_NAME = /^[a-z0-9]{1,20}$/;
const CONTEXT_ATTRIBUTES = new Set([
  'specversion',
  'id',
  'source',
  'type',
  'subject',
  'time',
  'datacontenttype',
  'dataschema',
  'data',
  'data_base64',
]);

/**
 * What is wrong with a value as a CloudEvents 1.0 JSON envelope: one message per problem, none
 * when it is a valid event. Not the `cloudevents` SDK's validation: it throws on the first problem
 * (ajv's wording), while the events service answers 400 with every problem of the envelope at
 * once; the rules here are the spec's, in 30 lines.
 */
export function cloudEventProblems(value: unknown): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return ['the body must be a JSON object (a CloudEvents 1.0 envelope in structured mode)'];
  }
  const ev = value as Record<string, unknown>;
  const problems: string[] = [];
  const nonEmpty = (name: string, max: number, required: boolean) => {
    const v = ev[name];
    if (v === undefined) {
      if (required) problems.push(`${name} is required`);
    } else if (typeof v !== 'string' || v.length === 0) problems.push(`${name} must be a non-empty string`);
    else if (v.length > max) problems.push(`${name} must be at most ${max} characters`);
  };

  if (ev.specversion === undefined) problems.push('specversion is required');
  else if (ev.specversion !== '1.0') problems.push(`specversion must be "1.0" (got ${JSON.stringify(ev.specversion)})`);
  nonEmpty('id', 256, true);
  nonEmpty('source', 1024, true);
  nonEmpty('type', 256, true);
  nonEmpty('subject', 1024, false);
  nonEmpty('datacontenttype', 256, false);
  nonEmpty('dataschema', 1024, false);
  if (ev.time !== undefined) {
    if (typeof ev.time !== 'string' || !RFC3339.test(ev.time) || Number.isNaN(Date.parse(ev.time))) {
      problems.push('time must be an RFC 3339 timestamp, e.g. 2026-01-31T12:00:00Z');
    }
  }
  if (ev.data !== undefined && ev.data_base64 !== undefined)
    problems.push('data and data_base64 must not both be present');
  if (
    ev.data_base64 !== undefined &&
    (typeof ev.data_base64 !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(ev.data_base64))
  ) {
    problems.push('data_base64 must be a base64 string');
  }
  for (const [name, v] of Object.entries(ev)) {
    if (CONTEXT_ATTRIBUTES.has(name)) continue;
    if (!EXTENSION_NAME.test(name)) {
      problems.push(`extension attribute "${name.slice(0, 40)}" must be named with 1-20 lower-case letters or digits`);
    } else if (!['string', 'number', 'boolean'].includes(typeof v)) {
      problems.push(`extension attribute ${name} must be a string, number or boolean`);
    }
  }
  return problems;
}

export function isCloudEvent(value: unknown): value is CloudEvent {
  return cloudEventProblems(value).length === 0;
}

/** W3C trace context, as CloudEvents' distributed-tracing extension carries it. */
export interface EventTrace {
  traceparent?: string;
  tracestate?: string;
}

/** The trace context an event carries (its `traceparent` and `tracestate` extensions), if any. */
export function traceOf(ev: CloudEvent): EventTrace {
  const field = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return { traceparent: field(ev.traceparent), tracestate: field(ev.tracestate) };
}

/** A new envelope with `specversion`, `time` and a JSON `datacontenttype` filled in. */
export function cloudEvent<T>(fields: {
  id: string;
  source: string;
  type: string;
  subject?: string;
  data?: T;
}): CloudEvent<T> {
  return {
    specversion: '1.0',
    time: new Date().toISOString(),
    ...(fields.data !== undefined ? { datacontenttype: 'application/json' } : {}),
    ...fields,
  };
}

// ---------------------------------------------------------------------------------------------
// Publishing (over HTTP, through the events service)

export interface Published {
  /** The Redis stream entry id of the event (the first one, for a repeated publish). */
  streamId: string;
  /** True when an event with the same source and id had been published before. */
  duplicate: boolean;
}

/** The events service refused the event (4xx) or failed (5xx); `status` says which. */
export class EventsServiceError extends Error {
  override name = 'EventsServiceError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * POST /api/v1/events. An unreachable service throws a plain Error (worth retrying); an answer
 * other than 202 throws an EventsServiceError carrying the status and the service's detail.
 */
export async function publishEvent(
  opts: { eventsUrl: string; apiKey: string; timeoutMs?: number },
  event: CloudEvent,
): Promise<Published> {
  let res: Response;
  try {
    res = await fetch(new URL('/api/v1/events', opts.eventsUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json', 'x-api-key': opts.apiKey },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
    });
  } catch (err) {
    throw new Error(`events service unreachable at ${opts.eventsUrl}: ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => ({}))) as Partial<Published> & { detail?: string };
  if (res.status !== 202 || typeof body.streamId !== 'string') {
    throw new EventsServiceError(
      `events service answered ${res.status} to ${event.type} ${event.id}: ${body.detail ?? 'no detail'}`,
      res.status,
    );
  }
  return { streamId: body.streamId, duplicate: body.duplicate === true };
}
