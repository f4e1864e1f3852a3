/**
 * The worker's part of tracing (lib/tracing.ts), through @temporalio/interceptors-opentelemetry:
 * a workflow's spans (its run, the signals and updates it handles, the activities it schedules)
 * are made in the workflow sandbox from the trace context the client's start or signal carried, and
 * leave through the `exporter` sink into the process's span processor; an activity runs in a span
 * that is the child of the workflow's scheduling span, so its ERP, chat, bank and SMTP calls join
 * the trace.
 *
 * The interceptor modules are bundled with the workflows whether or not tracing is on, so a
 * workflow's code (and its replay) is the same either way; with tracing off the sink drops the spans.
 */
import { createRequire } from 'node:module';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  type OpenTelemetryWorkflowExporter,
} from '@temporalio/interceptors-opentelemetry';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import { activeTracing } from '../lib/tracing.js';

const require = createRequire(import.meta.url);

/** The workflow interceptor modules of every workflow bundle (bundleWorkflowCode's `workflowInterceptorModules`). */
export const workflowInterceptorModules = [
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
];

/** The sink the workflow interceptors export their spans through. */
export function workflowSpanSinks(): InjectedSinks<{ exporter: OpenTelemetryWorkflowExporter }> {
  const tracing = activeTracing();
  return {
    exporter: tracing
      ? makeWorkflowExporter(tracing.spanProcessor, tracing.resource)
      : { export: { fn: () => undefined } },
  };
}

/** Each activity attempt in a span of its own while tracing is on. */
export function activityTracing(): ActivityInterceptorsFactory[] {
  if (!activeTracing()) return [];
  return [
    (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
  ];
}
