/**
 * The figures behind `GET /api/portal/odoo/:slug/{kpis,cashflow,alerts}` (and the data service's
 * `/data/workspaces/:workspaceId/…`). A figure is read through one cache, `DashboardCache` below:
 *
 *   cached? → answer; else read the tenant ERP (dashboard-reads.ts: tenant, route, API user,
 *   XML-RPC / JSON-2) → compute (dashboard-figures.ts, pure) → cache → answer.
 *
 * An ERP failure becomes the caller's problem (404/502/503/504) in `erpFailureAsProblem`.
 */
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { TenantErpReads, erpFailureAsProblem } from './dashboard-reads.js';
import { alertsFigure, cashflowFigure, cashflowStart, isoDay, kpisFigure, type FigureOf } from './dashboard-figures.js';
import type { Alerts, Cashflow, Kpis } from './dashboard-schemas.js';

export {
  AlertsSchema,
  CashflowSchema,
  KpisSchema,
  type Alerts,
  type Cashflow,
  type Kpis,
} from './dashboard-schemas.js';

export type FigureName = 'kpis' | 'cashflow' | 'alerts';

export interface DashboardService {
  kpis(workspaceSlug: string): Promise<Kpis>;
  cashflow(workspaceSlug: string, opts?: { months?: number }): Promise<Cashflow>;
  alerts(workspaceSlug: string): Promise<Alerts>;
}

/**
 * The service with its figures also as JSON (UTF-8 bytes), the way the API sends them: the bytes
 * themselves when this process has them at hand (answered less than a second ago), so the route can
 * answer at once, and every answer of that second sends the same bytes (no text to encode again).
 */
export interface DashboardAnswers extends DashboardService {
  json(workspaceSlug: string, figure: FigureName, opts?: { months?: number }): Buffer | Promise<Buffer>;
}

/** Answers from a service made elsewhere (the tests' stand-ins): its figures as they come, uncached. */
export function answersOf(service: DashboardService): DashboardAnswers {
  return {
    ...service,
    json: async (slug, figure, opts) =>
      Buffer.from(JSON.stringify(await (figure === 'cashflow' ? service.cashflow(slug, opts) : service[figure](slug)))),
  };
}

export const DASHBOARD_CACHE_SECONDS = 30;
const RECENT_MS = 1_000;
const RECENT_MAX = 10_000;

/** A figure this process answered: when it was asked, and its JSON bytes (once they came). */
interface RecentAnswer {
  at: number;
  json: Promise<Buffer>;
  bytes?: Buffer;
}

/**
 * The dashboards' cache: each figure of each workspace as JSON, in Redis for
 * DASHBOARD_CACHE_SECONDS (shared by every replica; key `erp:dashboard:<slug>:<figure>`). The
 * API's answers are also kept in this process for a second in front of it, as the bytes sent: a
 * busy workspace's figure costs one Redis read a second per replica, no parsing, serializing or
 * encoding, and concurrent first requests share one computation. Failures are not kept.
 */
export class DashboardCache {
  private readonly recent = new Map<string, RecentAnswer>();

  constructor(private readonly redis: Redis) {}

  /** From Redis, else computed and stored there. */
  async shared(key: string, compute: () => Promise<unknown>): Promise<Buffer> {
    const hit = await this.redis.getBuffer(key);
    if (hit && hit.length > 0) return hit;
    const json = Buffer.from(JSON.stringify(await compute()));
    await this.redis.set(key, json, 'EX', DASHBOARD_CACHE_SECONDS);
    return json;
  }

  /** The answer this process gave for `key` less than a second ago, if any: its bytes once they came. */
  recentHit(key: string): Buffer | Promise<Buffer> | undefined {
    const hit = this.recent.get(key);
    return hit && Date.now() - hit.at < RECENT_MS ? (hit.bytes ?? hit.json) : undefined;
  }

  /** The same, answered from this process when it was asked less than a second ago. */
  recentOrShared(key: string, compute: () => Promise<unknown>): Buffer | Promise<Buffer> {
    const hit = this.recentHit(key);
    if (hit) return hit;
    const json = this.shared(key, compute);
    const entry: RecentAnswer = { at: Date.now(), json };
    this.recent.set(key, entry);
    json.then(
      (bytes) => (entry.bytes = bytes),
      () => this.recent.delete(key),
    );
    if (this.recent.size > RECENT_MAX) this.recent.delete(this.recent.keys().next().value!);
    return json;
  }
}

export function createDashboardService(deps: { pool: pg.Pool; redis: Redis; config: Config }): DashboardAnswers {
  const cache = new DashboardCache(deps.redis);

  /** Reads the workspace's ERP and computes the figure; an ERP failure becomes the caller's problem. */
  async function compute(workspace: string, figure: FigureName, months: number): Promise<Kpis | Cashflow | Alerts> {
    try {
      const erp = await TenantErpReads.of(deps, workspace);
      const today = isoDay(new Date());
      const of: FigureOf = { workspace, today, erpVersion: erp.version };
      if (figure === 'kpis') return kpisFigure(of, await erp.kpiInputs(today));
      if (figure === 'alerts') return alertsFigure(of, await erp.alertInputs(today));
      const first = cashflowStart(today, months);
      return cashflowFigure(of, first, months, await erp.cashflowInputs(isoDay(first), today));
    } catch (err) {
      throw erpFailureAsProblem(err);
    }
  }

  /** The cache key and computation of a figure (cash flow: 1 to 24 months, 6 by default). */
  const monthsOf = (opts: { months?: number } = {}) => Math.min(Math.max(Math.trunc(opts.months ?? 6), 1), 24);
  const keyOf = (slug: string, figure: FigureName, months: number) =>
    figure === 'cashflow' ? `erp:dashboard:${slug}:cashflow:${months}` : `erp:dashboard:${slug}:${figure}`;
  function figureOf(slug: string, figure: FigureName, opts?: { months?: number }) {
    const months = monthsOf(opts);
    return { key: keyOf(slug, figure, months), compute: () => compute(slug, figure, months) };
  }
  const parsed = async <T>(slug: string, figure: FigureName, opts?: { months?: number }): Promise<T> => {
    const { key, compute } = figureOf(slug, figure, opts);
    return JSON.parse((await cache.shared(key, compute)).toString('utf8')) as T;
  };

  return {
    kpis: (slug) => parsed<Kpis>(slug, 'kpis'),
    cashflow: (slug, opts) => parsed<Cashflow>(slug, 'cashflow', opts),
    alerts: (slug) => parsed<Alerts>(slug, 'alerts'),
    /** Answered from this process when asked less than a second ago (`DashboardCache.recentOrShared`). */
    json(slug, figure, opts) {
      // a recent answer costs a look-up: no closure for a computation that will not run
      const recent = cache.recentHit(keyOf(slug, figure, monthsOf(opts)));
      if (recent) return recent;
      const { key, compute } = figureOf(slug, figure, opts);
      return cache.recentOrShared(key, compute);
    },
  };
}
