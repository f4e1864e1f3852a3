/**
 * Fake peers for the tenant lifecycle's activities, as the Temporal samples test workflows: a real
 * worker on the run's real Temporal dev server, with activities that answer like the ERP database,
 * the route table, the filestore, the schedules, the chat and the events service would, and that
 * a test can take down (every call fails, as an unreachable peer does), slow down, or make fail for
 * a business reason. Every call is counted; every published status is kept.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ApplicationFailure } from '@temporalio/common';
import type { Activities } from '../../activities/index.js';
import type { TenantStatus } from '../../domain/tenants/types.js';
import { tierModuleNames } from '../../domain/billing/tiers.js';

type LifecycleActivityName =
  | 'reserveSubdomain'
  | 'cloneTenantDatabase'
  | 'installTenantDatabase'
  | 'ensureErpApiUser'
  | 'ensureTierModules'
  | 'createRoute'
  | 'createFilestore'
  | 'createBackupSchedule'
  | 'ensureChatRoom'
  | 'ensureErpSignIn'
  | 'probeTenantHealth'
  | 'publishProvisionedEvent'
  | 'createTenantBackup'
  | 'removeRoute'
  | 'dropTenantDatabase'
  | 'wipeFilestore'
  | 'deleteBackupSchedule'
  | 'archiveChatRoom'
  | 'removeErpSignIn'
  | 'recordTenantStatus';

export type FakeActivities = Pick<Activities, LifecycleActivityName>;

export class FakeTenantPeers {
  /** Calls per activity (each attempt counts). */
  readonly calls = new Map<LifecycleActivityName, number>();
  /** Activities whose peer is down: each call fails like a refused connection, with this message. */
  readonly down = new Map<LifecycleActivityName, string>();
  /** Activities that fail their next N calls (a peer away for N attempts), then work again. */
  readonly failNext = new Map<LifecycleActivityName, { times: number; message: string }>();
  /** Activities that fail for a business reason (non-retryable), with this error type and message. */
  readonly businessFailure = new Map<LifecycleActivityName, { type: string; message: string }>();
  /** Activities that take this long (ms) before they answer. */
  readonly slow = new Map<LifecycleActivityName, number>();
  /** What the health probe sees. */
  healthy = true;
  /** The next N probes see an unhealthy tenant (e.g. an ERP still loading a freshly installed database). */
  unhealthyProbes = 0;
  /** The templates are missing: the clone says so, and the database is installed from scratch. */
  templatesMissing = false;
  /** The databases installed from scratch (a later clone finds them: 'exists'). */
  readonly installed = new Set<string>();
  /** Every status each tenant published, in order. */
  readonly published = new Map<string, TenantStatus[]>();
  /** The last status each tenant published. */
  readonly statuses = new Map<string, TenantStatus>();
  /** The ERP modules installed per tenant database (the template's tier's on the first call). */
  readonly modules = new Map<string, Set<string>>();

  /** Every peer up, fast and healthy again (between tests, so one test's outage never leaks into the next). */
  reset(): void {
    for (const m of [this.down, this.failNext, this.businessFailure, this.slow]) m.clear();
    this.healthy = true;
    this.unhealthyProbes = 0;
    this.templatesMissing = false;
  }

  count(name: LifecycleActivityName): number {
    return this.calls.get(name) ?? 0;
  }

  /** Takes a peer down for its next `times` calls. */
  failFor(name: LifecycleActivityName, times: number, message: string): void {
    this.failNext.set(name, { times, message });
  }

  private async enter(name: LifecycleActivityName): Promise<void> {
    this.calls.set(name, this.count(name) + 1);
    const delay = this.slow.get(name);
    if (delay) await sleep(delay);
    const business = this.businessFailure.get(name);
    if (business)
      throw ApplicationFailure.create({ type: business.type, message: business.message, nonRetryable: true });
    const down = this.down.get(name);
    if (down !== undefined) throw new Error(down);
    const failing = this.failNext.get(name);
    if (failing && failing.times > 0) {
      failing.times -= 1;
      throw new Error(failing.message);
    }
  }

  activities(): FakeActivities {
    const run =
      <A extends unknown[], R>(name: LifecycleActivityName, answer: (...args: A) => R) =>
      async (...args: A): Promise<Awaited<R>> => {
        await this.enter(name);
        return await answer(...args);
      };
    const host = (tenant: string) => `${tenant}.erp.test`;
    return {
      reserveSubdomain: run('reserveSubdomain', ({ name }) => ({ reserved: 'new' as const, hostname: host(name) })),
      cloneTenantDatabase: run('cloneTenantDatabase', ({ database, spec }) => ({
        database,
        template: `erp_tpl_${spec.tier}_${spec.erpVersion}`,
        outcome: this.installed.has(database)
          ? ('exists' as const)
          : this.templatesMissing
            ? ('template-missing' as const)
            : ('created' as const),
      })),
      installTenantDatabase: run('installTenantDatabase', ({ database, spec }) => ({
        database: this.installed.add(database) && database,
        outcome: 'installed' as const,
        installMs: this.slow.get('installTenantDatabase') ?? 0,
        template: undefined,
        missingTemplate: `erp_tpl_${spec.tier}_${spec.erpVersion}`,
        attempt: 1,
      })),
      ensureErpApiUser: run('ensureErpApiUser', ({ database }) => ({
        login: `api@${database}`,
        created: true,
        outcome: 'created' as const,
      })),
      ensureTierModules: run('ensureTierModules', ({ database, tier }) => {
        const installed = this.modules.get(database) ?? new Set(tierModuleNames(tier));
        this.modules.set(database, installed);
        const wanted = tierModuleNames(tier);
        const added = wanted.filter((m) => !installed.has(m));
        added.forEach((m) => installed.add(m));
        const kept = [...installed].filter((m) => !wanted.includes(m)).sort();
        return {
          installed: added.sort(),
          present: wanted.length - added.length,
          kept,
          unavailable: [] as string[],
          eventRules: undefined,
          outcome: 'ok' as const,
        };
      }),
      createRoute: run('createRoute', ({ host }) => ({ host, outcome: 'created' as const })),
      createFilestore: run('createFilestore', ({ tenant }) => ({ path: `/filestore/${tenant}`, created: true })),
      createBackupSchedule: run('createBackupSchedule', ({ tenant }) => ({
        scheduleId: `backup:${tenant}`,
        outcome: 'created' as const,
      })),
      ensureChatRoom: run('ensureChatRoom', ({ spec }) => ({
        id: `room-${spec.subdomain}`,
        room: `support-${spec.subdomain}`,
        created: true,
        restored: false,
      })),
      ensureErpSignIn: run('ensureErpSignIn', ({ tenant, host }) => ({
        clientId: `erp-${tenant}`,
        redirectUri: `http://${host}/auth_oauth/signin`,
        providerId: 1,
        moduleInstalled: false,
        replacedScope: undefined,
        created: 0,
        updated: 0,
        archived: 0,
      })),
      probeTenantHealth: run('probeTenantHealth', async ({ windowMs }) => {
        const unhealthyNow = this.unhealthyProbes > 0;
        if (unhealthyNow) this.unhealthyProbes -= 1;
        if (this.healthy && !unhealthyNow) return { healthy: true, httpStatus: 200, detail: '200: pass', attempts: 1 };
        await sleep(Math.min(windowMs, 200));
        return { healthy: false, httpStatus: 503, detail: '503: the ERP worker is not running', attempts: 1 };
      }),
      publishProvisionedEvent: run('publishProvisionedEvent', ({ tenant, generation }) => ({
        eventId: `client.provisioned:${tenant}:${generation}`,
        duplicate: false,
        streamId: '1-0',
      })),
      createTenantBackup: run('createTenantBackup', ({ tenant }) => ({
        backupId: `${tenant}/final`,
        files: [
          {
            kind: 'database' as const,
            path: `pro/${tenant}/final/database.dump`,
            sizeBytes: 1,
            sha256: '0'.repeat(64),
            expiresAt: '2099-01-01T00:00:00.000Z',
          },
        ],
      })),
      removeRoute: run('removeRoute', () => ({ outcome: 'removed' as const })),
      dropTenantDatabase: run('dropTenantDatabase', ({ database }) => ({ database, outcome: 'dropped' as const })),
      wipeFilestore: run('wipeFilestore', ({ tenant }) => ({ path: `/filestore/${tenant}`, wiped: true })),
      deleteBackupSchedule: run('deleteBackupSchedule', () => ({ outcome: 'deleted' as const })),
      archiveChatRoom: run('archiveChatRoom', ({ spec }) => ({
        room: `support-${spec.subdomain}`,
        outcome: 'archived' as const,
      })),
      removeErpSignIn: run('removeErpSignIn', () => ({ removed: true })),
      recordTenantStatus: run('recordTenantStatus', ({ name, status }) => {
        this.statuses.set(name, status);
        this.published.set(name, [...(this.published.get(name) ?? []), status]);
      }),
    } satisfies FakeActivities;
  }
}
