/**
 * A tenant's provisioning is one trace: the TenantClient names it (its status, `kubectl describe`,
 * `npm run cli -- describe tenant`), and Zipkin's trace of it holds the controller's reconcile that applied the object, the signal
 * that reached the lifecycle workflow, the workflow's reconcile and each activity it ran, up to Ready,
 * and the welcome e-mail that Ready leads to.
 */
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { Tracing } from '../../lib/tracing.js';
import { describeTenant } from '../../cli/tenant-output.js';
import { kubectl } from '../../scripts/local-kubernetes.js';
import { kubeconfigPath } from '../support/kubernetes.js';
import {
  applyTenant,
  kubeCondition,
  startTenantPlatform,
  uniqueTenant,
  waitForKubeTenant,
  type TenantPlatform,
} from '../support/tenant-platform.js';
import { spanNames, startTestTracing, zipkinTrace, type ZipkinSpan } from '../support/traces.js';

let tracing: Tracing;
let p: TenantPlatform;

beforeAll(async () => {
  tracing = startTestTracing();
  p = await startTenantPlatform({ ...inject('zipkinEnv') });
});

afterAll(async () => {
  await p?.close();
});

/** The span `name` (Zipkin lowercases names) and its ancestors' names, nearest first. */
function ancestry(spans: ZipkinSpan[], span: ZipkinSpan): string[] {
  const byId = new Map(spans.map((s) => [s.id, s]));
  const names: string[] = [];
  for (let s = byId.get(span.parentId ?? ''); s; s = byId.get(s.parentId ?? '')) names.push(s.name);
  return names;
}

it('kubectl apply → Ready is one trace, named by the TenantClient', async () => {
  const name = uniqueTenant('traced');
  await applyTenant(p, name);
  const ready = await waitForKubeTenant(p, name, (o) => kubeCondition(o, 'Ready')?.status === 'True', 120_000);
  const traceId = ready!.status!.traceId!;
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(ready!.status!.traceUrl).toBe(`${inject('zipkinUrl')}/zipkin/traces/${traceId}`);
  // what an operator reads
  const described = kubectl(kubeconfigPath(), ['describe', 'tenantclient', name]);
  expect(described).toMatch(new RegExp(`Trace URL:\\s+${ready!.status!.traceUrl}\\n`));
  expect(described).toMatch(new RegExp(`Temporal Ui URL:\\s+\\S+workflows/tenant%3A${name}\\n`));
  // and what `npm run cli -- describe tenant` prints, under the workflow's link
  const page = describeTenant(ready!, await p.kube.api.events(name));
  expect(page).toMatch(new RegExp(`Temporal UI:\\s+\\S+\\nTrace:\\s+${ready!.status!.traceUrl}\\n`));

  const reconcile = `reconcile ${name} generation 1`;
  const spans = await zipkinTrace(tracing, traceId, (s) => {
    const names = spanNames(s);
    return names.includes(reconcile) && names.includes('smtp send');
  });
  const names = spanNames(spans);
  expect(names).toContain(`reconcile tenantclient ${name}`);
  expect(names).toContain('signalwithstartworkflow:tenantlifecycle');
  expect(names).toContain('handlesignal:apply');
  // the workflow's reconcile runs in the apply's trace, and each activity under it
  const workflowReconcile = spans.find((s) => s.name === reconcile)!;
  expect(ancestry(spans, workflowReconcile)).toEqual([
    'handlesignal:apply',
    'signalwithstartworkflow:tenantlifecycle',
    `reconcile tenantclient ${name}`,
  ]);
  const clone = spans.find((s) => s.name === 'runactivity:clonetenantdatabase')!;
  expect(ancestry(spans, clone)).toContain(reconcile);
  expect(clone.tags).toMatchObject({ temporalWorkflowId: `tenant:${name}` });
  // what Ready leads to: the client.provisioned event's consumer starts the welcome e-mail, sent over SMTP
  expect(names).toEqual(expect.arrayContaining(['handle client.provisioned', 'startworkflow:sendwelcomeemail']));
  expect(names).toContain('smtp send');
});
