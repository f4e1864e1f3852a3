/**
 * The figures a backup is checked by: record counts of the tenant's main models (taken in the same
 * database snapshot as the `pg_dump`), its filestore's files with their sizes, and its dashboards'
 * KPIs, cash flow and alerts (read through the ERP before and after the dump, kept when they agree).
 * Recorded when the backup is taken; the drill measures a restored copy the same way and compares.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import type pg from 'pg';
import type { DashboardSnapshot } from '../erp/dashboard-snapshot.js';

/** The main models' tables (Odoo's names; the stand-in has the same ones), counted where they exist. */
export const MAIN_MODEL_TABLES = [
  'res_partner',
  'res_users',
  'account_move',
  'account_move_line',
  'account_payment',
  'product_product',
  'sale_order',
  'stock_quant',
  'ir_attachment',
] as const;

export interface BackupFigures {
  /** Rows per table of the main models. */
  counts: Record<string, number>;
  /** Filestore files (path inside the tenant's folder) → size in bytes. */
  files: Record<string, number>;
  /**
   * The dashboards as of the backup's day; null when they could not be read (no API user, the ERP
   * unreachable) or changed while the dump was taken (then the dump's own figures are not known).
   */
  dashboards?: DashboardSnapshot | null;
}

/** The dashboards read before and after the dump: kept only when they agree (nothing moved meanwhile). */
export function steadyDashboards(
  before: DashboardSnapshot | null,
  after: DashboardSnapshot | null,
): DashboardSnapshot | null {
  return before && after && isDeepStrictEqual(before, after) ? after : null;
}

/** Every leaf of a JSON value by its path (`kpis.revenue`, `alerts.items.0.amount`). */
function leaves(value: unknown, at: string, out: Map<string, unknown>): Map<string, unknown> {
  if (value !== null && typeof value === 'object')
    for (const [key, child] of Object.entries(value)) leaves(child, at ? `${at}.${key}` : key, out);
  else out.set(at, value);
  return out;
}

/** What differs between two dashboard snapshots, one sentence per figure that differs; compared as stored (JSON: -0 is 0). */
function compareDashboards(recorded: DashboardSnapshot, restored: DashboardSnapshot): string[] {
  const differences: string[] = [];
  for (const figure of ['kpis', 'cashflow', 'alerts'] as const) {
    const [was, is] = [leaves(recorded[figure], '', new Map()), leaves(restored[figure], '', new Map())];
    const differing = [...new Set([...was.keys(), ...is.keys()])].filter(
      (k) => JSON.stringify(was.get(k)) !== JSON.stringify(is.get(k)),
    );
    if (!differing.length) continue;
    const shown = differing
      .slice(0, 5)
      .map(
        (k) =>
          `${k} ${JSON.stringify(was.get(k) ?? null)} in the backup, ${JSON.stringify(is.get(k) ?? null)} restored`,
      );
    differences.push(
      `dashboards ${figure} as of ${recorded.today}: ${shown.join('; ')}${differing.length > 5 ? ` (and ${differing.length - 5} more)` : ''}`,
    );
  }
  return differences;
}

/** Row counts of the main models that exist in the database `db` is connected to (inside its current transaction). */
export async function countMainModels(db: pg.ClientBase): Promise<Record<string, number>> {
  const { rows } = await db.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_name = ANY($1) ORDER BY table_name`,
    [MAIN_MODEL_TABLES],
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of rows) {
    const res = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${db.escapeIdentifier(table_name)}`);
    counts[table_name] = res.rows[0]!.n;
  }
  return counts;
}

/** Every file under `dir` (relative path → size); an absent folder has none. */
export async function listFiles(dir: string): Promise<Record<string, number>> {
  const files: Record<string, number> = {};
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const full = path.join(entry.parentPath, entry.name);
    files[path.relative(dir, full)] = (await stat(full)).size;
  }
  return Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b)));
}

/** What differs between the figures recorded with the backup and those of the restored copy, one sentence each. */
export function compareFigures(recorded: BackupFigures, restored: BackupFigures): string[] {
  const differences: string[] = [];
  for (const table of new Set([...Object.keys(recorded.counts), ...Object.keys(restored.counts)])) {
    const [was, is] = [recorded.counts[table], restored.counts[table]];
    if (was !== is) differences.push(`${table}: ${was ?? 'absent'} rows in the backup, ${is ?? 'absent'} restored`);
  }
  for (const file of new Set([...Object.keys(recorded.files), ...Object.keys(restored.files)])) {
    const [was, is] = [recorded.files[file], restored.files[file]];
    if (was !== is)
      differences.push(
        `filestore ${file}: ${was === undefined ? 'absent' : `${was} bytes`} in the backup, ${is === undefined ? 'absent' : `${is} bytes`} restored`,
      );
  }
  if (recorded.dashboards && restored.dashboards)
    differences.push(...compareDashboards(recorded.dashboards, restored.dashboards));
  else if (recorded.dashboards)
    differences.push(`dashboards: recorded with the backup, not readable from the restored copy`);
  return differences;
}
