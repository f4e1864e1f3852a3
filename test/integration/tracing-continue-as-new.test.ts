/**
 * A reconcile that is not Ready yet when its run continues as new keeps its trace: the rounds of
 * the next run, up to Ready, are still spans of the apply that asked for them (the trace is carried
 * in the continued run's input), on the fake peers of the lifecycle's own tests.
 */
import { beforeAll, expect, it } from 'vitest';
import { Client } from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import {
  applySignal,
  statusQuery,
  tenantWorkflowId,
  TENANT_LIFECYCLE_WORKFLOW,
  type ApplyRequest,
  type TenantLifecycleWorkflow,
} from '../../domain/tenants/workflow-contract.js';
import type { TenantStatus } from '../../domain/tenants/types.js';
import { inSpan, type Tracing } from '../../lib/tracing.js';
import { tenantSpec, useLifecycleWorker } from '../support/lifecycle-worker.js';
import { startTestTracing, zipkinTrace } from '../support/traces.js';

let tracing: Tracing;
// tracing starts before the worker is made (its span sink is chosen then)
beforeAll(() => {
  tracing = startTestTracing();
});
const lifecycle = useLifecycleWorker('tracing-continue-as-new');

const isReady = (s: TenantStatus | undefined) => s?.conditions.find((c) => c.type === 'Ready')?.status === 'True';

it('the rounds after a continue-as-new stay in the trace of the apply, up to Ready', async () => {
  const { peers, taskQueue } = lifecycle;
  // a client that sends the trace with what it starts and signals, as the controller's does
  const client = new Client({
    connection: lifecycle.client.connection,
    interceptors: { workflow: [new OpenTelemetryWorkflowClientInterceptor()] },
  });
  const name = `traced-can-${Date.now().toString(36)}`;
  const spec = tenantSpec(name);
  peers.down.set('createRoute', 'connect ECONNREFUSED 127.0.0.1:5432 (route table)');
  const { traceId, handle } = await inSpan('apply', {}, async (span) => {
    const handle = await client.workflow.signalWithStart<TenantLifecycleWorkflow, [ApplyRequest]>(
      TENANT_LIFECYCLE_WORKFLOW,
      {
        workflowId: tenantWorkflowId(name),
        taskQueue,
        args: [
          {
            name,
            uid: `uid-${name}`,
            generation: 1,
            spec,
            settings: {
              readyDeadlineMs: 60_000,
              soakPeriodMs: 3_600_000,
              probeIntervalMs: 100,
              reconcileBackoffMaxMs: 200,
              retryIntervals: { initialMs: 20, maximumMs: 50 },
              // a short history: the failing rounds continue as new
              historyLimit: 60,
            },
          },
        ],
        signal: applySignal,
        signalArgs: [{ uid: `uid-${name}`, generation: 1, spec }],
      },
    );
    return { traceId: span.spanContext().traceId, handle };
  });
  const firstRunId = (await handle.describe()).runId;
  // failing rounds until the run has continued as new
  await expect.poll(async () => (await handle.describe()).runId, { timeout: 30_000 }).not.toBe(firstRunId);
  peers.down.delete('createRoute');
  await expect.poll(async () => isReady(await handle.query(statusQuery)), { timeout: 30_000 }).toBe(true);

  // the round that reached Ready ran in the continued run, and in the apply's trace
  const readyRound = (s: { name: string; tags?: Record<string, string> }) =>
    s.name === `reconcile ${name} generation 1` && s.tags?.['plana.outcome'] === 'ready';
  const spans = await zipkinTrace(tracing, traceId, (s) => s.some(readyRound));
  const rounds = spans.filter((s) => s.name === `reconcile ${name} generation 1`);
  expect(rounds.length).toBeGreaterThan(1);
  expect(rounds.filter((s) => s.tags?.['plana.outcome'] === 'not-ready').length).toBeGreaterThan(0);
  await handle.terminate('test done');
});
