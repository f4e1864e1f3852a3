/**
 * Traces in tests: this test process's tracing pointed at the run's Zipkin (test/global-setup.ts),
 * and a trace read back from Zipkin's API as an operator's link would show it.
 */
import { inject } from 'vitest';
import { parseConfig } from '../../lib/config.js';
import { startTracing, type Tracing } from '../../lib/tracing.js';

/** Starts tracing in this process (before the apps, clients and workers are built), sending to the run's Zipkin. */
export function startTestTracing(): Tracing {
  const tracing = startTracing('plana-test', parseConfig({ ...inject('zipkinEnv') }));
  if (!tracing) throw new Error('tracing did not start');
  return tracing;
}

/** A span as Zipkin's v2 API answers it. */
export interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  name: string;
  kind?: 'SERVER' | 'CLIENT' | 'PRODUCER' | 'CONSUMER';
  tags?: Record<string, string>;
}

/**
 * The spans of trace `traceId` once `complete` says they are all there (spans arrive in batches,
 * from the test process's exporter): flushes, reads, and tries again for up to `timeoutMs`.
 */
export async function zipkinTrace(
  tracing: Tracing,
  traceId: string,
  complete: (spans: ZipkinSpan[]) => boolean,
  timeoutMs = 30_000,
): Promise<ZipkinSpan[]> {
  const deadline = Date.now() + timeoutMs;
  let spans: ZipkinSpan[] = [];
  while (Date.now() < deadline) {
    await tracing.flush();
    const res = await fetch(`${inject('zipkinUrl')}/api/v2/trace/${traceId}`);
    spans = res.ok ? ((await res.json()) as ZipkinSpan[]) : [];
    if (complete(spans)) return spans;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`trace ${traceId} incomplete after ${timeoutMs} ms: ${spans.map((s) => s.name).join(', ')}`);
}

/** The names of `spans`, for a readable assertion. */
export const spanNames = (spans: ZipkinSpan[]) => spans.map((s) => s.name);
