/**
 * OpenTelemetry tracing of a platform process. Each composition root calls `startTracing(name)`
 * first; with OTEL_TRACES_EXPORTER=none (the default) it starts nothing and every span the code asks
 * for is OpenTelemetry's no-op. Otherwise it registers a tracer provider (AsyncLocalStorage context,
 * W3C `traceparent` propagation, parent-based ratio sampling) whose spans leave in batches (the
 * exporter drops what it cannot send: a trace store that is down slows no request), and traces:
 *
 * - the HTTP servers (lib/http-tracing.ts: a SERVER span per request, the request id is its trace id);
 * - outbound HTTP inside a trace: fetch and undici (@opentelemetry/instrumentation-undici, on
 *   undici's diagnostics channels) and node:http (the ERP's XML-RPC; Node's `http.client.*`
 *   channels, below), each a CLIENT span that sends `traceparent` on;
 * - Temporal through @temporalio/interceptors-opentelemetry (lib/temporal.ts for clients,
 *   worker/index.ts for workflows and activities).
 *
 * Nothing traces PostgreSQL or Redis calls: the hot paths make many, and the story of a request is
 * told by the spans above.
 */
import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { isTracingSuppressed } from '@opentelemetry/core';
import { Resource } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ZipkinExporter } from '@opentelemetry/exporter-zipkin';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import type { Config } from './config.js';

export type TracingConfig = Pick<
  Config,
  'OTEL_TRACES_EXPORTER' | 'OTEL_EXPORTER_ZIPKIN_ENDPOINT' | 'OTEL_TRACES_SAMPLER_ARG'
>;

/** What a running tracer provider lends the Temporal worker (its workflow spans leave through a sink). */
export interface Tracing {
  resource: Resource;
  spanProcessor: SpanProcessor;
  /** Sends what is buffered now (tests, and a process that stops). */
  flush(): Promise<void>;
}

let running: Tracing | undefined;

/** The platform's tracer: one name for every span the platform's own code starts. */
export const tracer = () => trace.getTracer('plana');

/** The process's tracing once startTracing has started it; undefined when tracing is off. */
export const activeTracing = (): Tracing | undefined => running;

/** Starts tracing for the process named `serviceName` when cfg turns it on (once per process). */
export function startTracing(serviceName: string, cfg: TracingConfig): Tracing | undefined {
  if (running || cfg.OTEL_TRACES_EXPORTER === 'none') return running;
  const resource = new Resource({ 'service.name': serviceName });
  const spanProcessor = new BatchSpanProcessor(exporterFor(cfg), { scheduledDelayMillis: 1000 });
  const provider = new NodeTracerProvider({
    resource,
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(cfg.OTEL_TRACES_SAMPLER_ARG) }),
    spanProcessors: [spanProcessor],
  });
  provider.register();
  registerInstrumentations({ instrumentations: [new UndiciInstrumentation({ requireParentforSpans: true })] });
  traceNodeHttpClients();
  running = { resource, spanProcessor, flush: () => provider.forceFlush() };
  return running;
}

function exporterFor(cfg: TracingConfig): SpanExporter {
  return cfg.OTEL_TRACES_EXPORTER === 'zipkin'
    ? new ZipkinExporter({ url: cfg.OTEL_EXPORTER_ZIPKIN_ENDPOINT })
    : new OTLPTraceExporter();
}

/** The trace of the active span (a 32-hex W3C trace id), if there is one. */
export function activeTraceId(): string | undefined {
  const spanContext = trace.getActiveSpan()?.spanContext();
  return spanContext && trace.isSpanContextValid(spanContext) ? spanContext.traceId : undefined;
}

/** The trace id of `span` when it is recorded (sampled and exported): a trace a link can lead to. */
export function recordedTraceId(span: Span): string | undefined {
  return span.isRecording() ? span.spanContext().traceId : undefined;
}

/** Link to a trace in the trace store's UI. */
export function traceUiLink(cfg: Pick<Config, 'TRACE_UI_URL'>, traceId: string): string {
  return `${cfg.TRACE_UI_URL}/${traceId}`;
}

/** Sets attributes (tenant, workspace, …) on the active span, when there is one. */
export function annotateActiveSpan(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes);
}

/** The active trace context as W3C headers (`traceparent`, `tracestate`): empty outside a trace. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context that W3C headers carry (ROOT when they carry none). */
export function contextFromHeaders(headers: Record<string, string | string[] | undefined>): Context {
  return propagation.extract(context.active(), headers);
}

/** Runs `fn` in a span of its own (child of the active one), ending it with fn's outcome. */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      recordFailure(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Like inSpan, inside a trace only: without an active span, fn runs as it is (no span, no cost). */
export function inChildSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  return trace.getActiveSpan() ? inSpan(name, attributes, fn) : fn(undefined);
}

/**
 * Runs `fn` in the trace that `carrier` names with its W3C fields (`traceparent`, `tracestate`:
 * a CloudEvent's distributed-tracing extension, a job's fields); as it is when it names none.
 */
export function inTraceOf<T>(
  carrier: { readonly traceparent?: unknown; readonly tracestate?: unknown } | undefined,
  fn: () => T,
): T {
  if (!running || typeof carrier?.traceparent !== 'string') return fn();
  return context.with(propagation.extract(ROOT_CONTEXT, carrier), fn);
}

/** Marks `span` failed with what failed. */
export function recordFailure(span: Span, err: unknown): void {
  span.recordException(err instanceof Error ? err : String(err));
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * A CLIENT span per node:http request made inside a trace (never one of the exporter's own, whose
 * context suppresses tracing), with `traceparent` added to the request's headers.
 */
function traceNodeHttpClients(): void {
  const spans = new WeakMap<ClientRequest, Span>();
  subscribe('http.client.request.created', (message) => {
    const { request } = message as { request: ClientRequest };
    const parent = context.active();
    if (!trace.getSpan(parent) || isTracingSuppressed(parent)) return;
    const host = String(request.getHeader('host') ?? request.host);
    const span = tracer().startSpan(
      `${request.method} ${host}`,
      {
        kind: SpanKind.CLIENT,
        attributes: { 'http.request.method': request.method, 'server.address': host, 'url.path': request.path },
      },
      parent,
    );
    propagation.inject(trace.setSpan(parent, span), request, { set: (req, k, v) => req.setHeader(k, v) });
    spans.set(request, span);
  });
  subscribe('http.client.response.finish', (message) => {
    const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
    const span = spans.get(request);
    if (!span) return;
    const status = response.statusCode ?? 0;
    span.setAttribute('http.response.status_code', status);
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${status}` });
    span.end();
    spans.delete(request);
  });
  subscribe('http.client.request.error', (message) => {
    const { request, error } = message as { request: ClientRequest; error: Error };
    const span = spans.get(request);
    if (!span) return;
    recordFailure(span, error);
    span.end();
    spans.delete(request);
  });
}
