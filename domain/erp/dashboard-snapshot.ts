/**
 * The dashboards' three figures (KPIs, cash flow, alerts) of one ERP database as of a given day,
 * read and computed exactly as the portal's dashboards are (dashboards.ts),
 * uncached: what a backup records of its tenant and what its drill reads back from the restored copy.
 */
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import type { ErpVersion } from '../tenants/types.js';
import { erpClientFor, loadErpApiCredentials } from './api-user.js';
import {
  alertsFigure,
  cashflowFigure,
  cashflowStart,
  isoDay,
  kpisFigure,
  TenantErpReads,
  type Alerts,
  type Cashflow,
  type FigureOf,
  type Kpis,
} from './dashboards.js';

/** The months of cash flow compared (the dashboards' default). */
const CASHFLOW_MONTHS = 6;

export interface DashboardSnapshot {
  /** The day the figures are as of (`YYYY-MM-DD`, UTC): a drill reads the copy as of the same day. */
  today: string;
  kpis: Kpis;
  cashflow: Cashflow;
  alerts: Alerts;
}

/**
 * The figures of the ERP database `database` reached at `host`, signed in as `tenant`'s API user
 * (a restored copy has its source's users); null when the tenant has no API user yet.
 */
export async function readDashboardSnapshot(
  deps: { pool: pg.Pool; config: Config },
  target: { tenant: string; host: string; database: string; erpVersion: ErpVersion; today: string },
): Promise<DashboardSnapshot | null> {
  const credentials = await loadErpApiCredentials(deps.pool, deps.config.SECRETS_KEY, target.tenant);
  if (!credentials) return null;
  const client = erpClientFor(
    { baseUrl: deps.config.ERP_URL, host: target.host, db: target.database, version: target.erpVersion },
    credentials,
  );
  const erp = new TenantErpReads(client, target.erpVersion);
  const { today } = target;
  const of: FigureOf = { workspace: target.tenant, today, erpVersion: target.erpVersion };
  const first = cashflowStart(today, CASHFLOW_MONTHS);
  return {
    today,
    kpis: kpisFigure(of, await erp.kpiInputs(today)),
    cashflow: cashflowFigure(of, first, CASHFLOW_MONTHS, await erp.cashflowInputs(isoDay(first), today)),
    alerts: alertsFigure(of, await erp.alertInputs(today)),
  };
}
