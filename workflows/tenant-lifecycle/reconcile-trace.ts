/**
 * The trace a reconcile belongs to. The tracing interceptor (worker/tracing.ts) runs each message
 * handler in the trace of the client that sent it (the tenant controller's reconcile of a
 * `kubectl apply`); the loop that reconciles runs outside the handler, so the handler keeps that
 * trace's context (W3C headers) and the loop runs the reconcile in a span of it: the activities it
 * schedules, and their ERP, chat and HTTP calls, join the trace of the apply that asked for them.
 * Spans leave the sandbox through a sink and never make a command: replay is untouched.
 */
import { context, propagation, ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';

/** W3C trace headers (`traceparent`, `tracestate`); empty outside a trace. */
export type TraceHeaders = Record<string, string>;

/** The trace of the message being handled, as headers to keep in the workflow's state. */
export function handledMessageTrace(): TraceHeaders {
  const headers: TraceHeaders = {};
  propagation.inject(context.active(), headers);
  return headers;
}

/** Runs `fn` in a span named `name` of the trace `headers` name (without a span when they name none). */
export async function inTrace<T>(headers: TraceHeaders, name: string, fn: () => Promise<T>): Promise<T> {
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  if (!trace.getSpan(parent)) return fn();
  return trace.getTracer('plana').startActiveSpan(name, {}, parent, async (span) => {
    try {
      const result = await fn();
      span.setAttribute('plana.outcome', String(result));
      return result;
    } catch (err) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}
