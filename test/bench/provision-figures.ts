/**
 * What `npm run bench:provision` measures besides the times to Ready: the CPU time of every
 * process (a process and its children, so PostgreSQL's backends count), resident memory, the
 * worker's activity metrics (each step's wait in Temporal's task queue and its run time) and, for
 * the tenants not Ready in time, what their workflows wait for.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Pool } from 'pg';
import { tenantWorkflowId } from '../../domain/tenants/workflow-contract.js';

/** Resident memory now and at its peak, in MB (/proc/<pid>/status). */
export function memoryOf(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) =>
    Number(/(\d+)\s+kB/.exec(status.split('\n').find((l) => l.startsWith(field)) ?? '')?.[1] ?? 0);
  return { rssMb: kb('VmRSS:') / 1024, peakMb: kb('VmHWM:') / 1024 };
}

/** /proc/<pid>/stat after the command name: [state, ppid, …]; index n is field n + 3 of proc(5). */
function statFields(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  } catch {
    return undefined; // gone meanwhile
  }
}

/**
 * CPU time (user + system, 100 ticks a second) of a process and all its descendants, in seconds:
 * the live ones' own time plus what each has collected from children it reaped (PostgreSQL's
 * backends that ended, the Temporal server's helpers), so none is counted twice or lost.
 */
export function treeCpuSeconds(root: number): number {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const ppid = Number(statFields(pid)?.[1]);
    if (ppid) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  let ticks = 0;
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    const f = statFields(pid);
    if (f) ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    stack.push(...(children.get(pid) ?? []));
  }
  return ticks / 100;
}

/** The pid a ManagedProcess wrote (scripts/managed-process.ts). */
export const pidFromFile = (file: string) => Number(readFileSync(file, 'utf8').trim());

/** Sum and count per label value of a Prometheus histogram, from a /metrics text. */
export function histogramTotals(
  text: string,
  name: string,
  label: string,
): Map<string, { sum: number; count: number }> {
  const totals = new Map<string, { sum: number; count: number }>();
  const line = new RegExp(`^${name}_(sum|count)\\{([^}]*)\\} ([0-9.e+-]+)$`);
  for (const l of text.split('\n')) {
    const m = line.exec(l);
    if (!m) continue;
    const value = new RegExp(`${label}="([^"]*)"`).exec(m[2]!)?.[1] ?? '';
    const t = totals.get(value) ?? { sum: 0, count: 0 };
    t[m[1] as 'sum' | 'count'] += Number(m[3]);
    totals.set(value, t);
  }
  return totals;
}

export async function scrape(url: string): Promise<string> {
  const res = await fetch(url);
  return res.text();
}

/** The worker's activity metrics between two scrapes: per activity, attempts, mean queue wait and mean run time. */
export function activityFigures(before: string, after: string): string {
  const diff = (name: string) => {
    const [b, a] = [histogramTotals(before, name, 'activity'), histogramTotals(after, name, 'activity')];
    return new Map(
      [...a].map(([k, v]) => [k, { sum: v.sum - (b.get(k)?.sum ?? 0), count: v.count - (b.get(k)?.count ?? 0) }]),
    );
  };
  const waits = diff('plana_activity_schedule_to_start_seconds');
  const runs = diff('plana_activity_duration_seconds');
  const ms = (t: { sum: number; count: number } | undefined) => (t && t.count ? (t.sum / t.count) * 1000 : 0);
  return [...waits]
    .filter(([, w]) => w.count > 0)
    .sort(([, a], [, b]) => ms(b) - ms(a))
    .map(
      ([activity, w]) =>
        `    ${activity.padEnd(28)}${String(w.count).padStart(5)} attempts, queue wait ${ms(w).toFixed(0).padStart(6)} ms, run ${ms(runs.get(activity)).toFixed(0).padStart(6)} ms`,
    )
    .join('\n');
}

/** The SDK's workflow-task queue wait (schedule → start) between two scrapes of the worker's Temporal metrics, in ms. */
export function workflowTaskWait(before: string, after: string): { tasks: number; meanMs: number } {
  const total = (text: string) =>
    [
      ...histogramTotals(text, 'temporal_workflow_task_schedule_to_start_latency(?:_seconds)?', 'task_queue').values(),
    ].reduce((a, t) => ({ sum: a.sum + t.sum, count: a.count + t.count }), { sum: 0, count: 0 });
  const [b, a] = [total(before), total(after)];
  const tasks = a.count - b.count;
  return { tasks, meanMs: tasks ? ((a.sum - b.sum) / tasks) * 1000 : 0 };
}

/** For each tenant not Ready: its phase and current step as the workflow last published them, and its pending activities. */
export async function explainNotReady(temporal: Client, pool: Pool, names: string[]): Promise<string[]> {
  const { rows } = await pool.query<{ name: string; phase: string; step: string | null; ready: string | null }>(
    `SELECT name, phase, status->>'currentStep' AS step,
            (SELECT c->>'status' FROM jsonb_array_elements(conditions) c WHERE c->>'type' = 'Ready') AS ready
       FROM tenant_status WHERE name = ANY($1)`,
    [names],
  );
  const published = new Map(rows.map((r) => [r.name, r]));
  const lines: string[] = [];
  for (const name of names) {
    const status = published.get(name);
    let waits = 'no workflow';
    try {
      const d = await temporal.workflow.getHandle(tenantWorkflowId(name)).describe();
      const pending = (d.raw.pendingActivities ?? []).map(
        (a) =>
          `${a.activityType?.name} attempt ${a.attempt} ${a.state === 2 ? 'started' : 'scheduled'}${a.lastFailure?.message ? ` (last failure: ${a.lastFailure.message.slice(0, 160)})` : ''}`,
      );
      waits = `${d.status.name}, ${d.historyLength} events; ${pending.length ? pending.join('; ') : 'no activity pending (a timer, a signal or a workflow task)'}`;
    } catch (err) {
      waits = `no workflow (${(err as Error).message})`;
    }
    lines.push(
      `    ${name}: ${status ? `published phase ${status.phase}, Ready=${status.ready ?? '?'}, step ${status.step ?? '?'}` : 'no status published'}; ${waits}`,
    );
  }
  return lines;
}

/** The API server's requests between two scrapes of its /metrics (`apiserver_request_total`), by verb and resource. */
export function apiServerRequests(before: string, after: string, perTenant: number): string {
  const counts = (text: string) => {
    const byKind = new Map<string, number>();
    for (const line of text.split('\n')) {
      if (!line.startsWith('apiserver_request_total{')) continue;
      const label = (name: string) => new RegExp(`[{,]${name}="([^"]*)"`).exec(line)?.[1] ?? '';
      const sub = label('subresource');
      const kind = `${label('verb')} ${label('resource')}${sub ? `/${sub}` : ''}`;
      byKind.set(kind, (byKind.get(kind) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
    }
    return byKind;
  };
  const [b, a] = [counts(before), counts(after)];
  const rows = [...a]
    .map(([kind, n]) => [kind, (n - (b.get(kind) ?? 0)) / perTenant] as const)
    .filter(([, n]) => n >= 0.05)
    .sort(([, x], [, y]) => y - x);
  const total = rows.reduce((s, [, n]) => s + n, 0);
  return [
    `    ${total.toFixed(1)} in all per tenant`,
    ...rows.map(([kind, n]) => `    ${kind.padEnd(44)}${n.toFixed(1).padStart(6)}`),
  ].join('\n');
}

/** Per step, the mean time from the previous step's end (the first published status for the first) to its own end. */
export async function stepBreakdown(pool: Pool, names: string[]): Promise<string> {
  const { rows } = await pool.query<{ steps: { step: string; at: string }[]; created_at: Date }>(
    `SELECT steps, created_at FROM tenant_status WHERE name = ANY($1)`,
    [names],
  );
  const perStep = new Map<string, number[]>();
  for (const r of rows) {
    let previous = r.created_at.getTime();
    for (const st of r.steps) {
      const at = Date.parse(st.at);
      perStep.set(st.step, [...(perStep.get(st.step) ?? []), at - previous]);
      previous = at;
    }
  }
  return [...perStep]
    .map(([name, ds]) => `    ${name.padEnd(34)}${(ds.reduce((a, b) => a + b, 0) / ds.length / 1000).toFixed(2)} s`)
    .join('\n');
}
