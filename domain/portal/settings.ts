/**
 * Workspace settings (specification §4.1 `GET/PUT /api/portal/settings`): the display name (the
 * workspace's `name`), locale (BCP 47, stored in canonical form), time zone (an IANA name) and
 * notification preferences. Admins write, members read. Validation uses the runtime's ICU data
 * (`Intl`), the same data the portal formats dates and numbers with.
 */
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';

/** The notification preferences a workspace can set, with their defaults. */
export const NOTIFICATION_DEFAULTS = {
  /** invoices and payment problems, to the admins */
  billing: true,
  /** an integration (ERP, bank consent, webhook endpoint) needs attention, to the admins */
  integrations: true,
  /** product news */
  productUpdates: false,
} as const;
export type NotificationPreferences = { [K in keyof typeof NOTIFICATION_DEFAULTS]: boolean };

export interface WorkspaceSettings {
  displayName: string;
  locale: string;
  timeZone: string;
  notifications: NotificationPreferences;
  updatedAt: Date | null;
}

export interface SettingsChange {
  displayName?: string;
  locale?: string;
  timeZone?: string;
  notifications?: Partial<NotificationPreferences>;
}

/** The IANA time zones of the runtime's ICU data, plus UTC. */
export const TIME_ZONES: ReadonlySet<string> = new Set([...Intl.supportedValuesOf('timeZone'), 'UTC']);

/** The canonical IANA name, or undefined. Links (e.g. Europe/Kiev) are accepted; abbreviations and offsets are not. */
export function canonicalTimeZone(tz: string): string | undefined {
  if (TIME_ZONES.has(tz)) return tz;
  if (!/^[A-Za-z]+(\/[A-Za-z0-9_+-]+){1,2}$/.test(tz)) return undefined;
  try {
    return new Intl.DateTimeFormat('en', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** The canonical form of a BCP 47 language tag (`en-us` → `en-US`), or undefined. */
export function canonicalLocale(tag: string): string | undefined {
  try {
    const [canonical] = Intl.getCanonicalLocales(tag);
    return canonical;
  } catch {
    return undefined;
  }
}

export async function getSettings(db: pg.Pool | pg.PoolClient, workspaceId: string): Promise<WorkspaceSettings> {
  const { rows } = await db.query<{
    name: string;
    locale: string | null;
    time_zone: string | null;
    notifications: Partial<NotificationPreferences> | null;
    updated_at: Date | null;
  }>(
    `SELECT w.name, s.locale, s.time_zone, s.notifications, s.updated_at
       FROM workspaces w LEFT JOIN workspace_settings s ON s.workspace_id = w.id WHERE w.id = $1`,
    [workspaceId],
  );
  const row = rows[0];
  if (!row) throw new AppError('NOT_FOUND', 'This workspace does not exist.');
  return {
    displayName: row.name,
    locale: row.locale ?? 'en',
    timeZone: row.time_zone ?? 'UTC',
    notifications: { ...NOTIFICATION_DEFAULTS, ...row.notifications },
    updatedAt: row.updated_at,
  };
}

/** Validates all fields first (one message per problem, nothing written), then writes them in one transaction. */
export async function changeSettings(
  pool: pg.Pool,
  workspaceId: string,
  userId: string,
  change: SettingsChange,
): Promise<WorkspaceSettings> {
  const errors: { field: string; message: string }[] = [];
  const locale = change.locale === undefined ? undefined : canonicalLocale(change.locale);
  if (change.locale !== undefined && !locale)
    errors.push({
      field: 'body.locale',
      message: `"${change.locale}" is not a BCP 47 language tag (e.g. en, de-CH, pt-BR)`,
    });
  const timeZone = change.timeZone === undefined ? undefined : canonicalTimeZone(change.timeZone);
  if (change.timeZone !== undefined && !timeZone)
    errors.push({
      field: 'body.timeZone',
      message: `"${change.timeZone}" is not an IANA time zone (e.g. Europe/Zurich, America/New_York, UTC)`,
    });
  const displayName = change.displayName?.trim();
  if (change.displayName !== undefined && !displayName)
    errors.push({ field: 'body.displayName', message: 'must not be blank' });
  if (errors.length)
    throw new AppError('BAD_REQUEST', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });

  return withTransaction(pool, async (db) => {
    if (displayName) await db.query('UPDATE workspaces SET name = $2 WHERE id = $1', [workspaceId, displayName]);
    await db.query(
      `INSERT INTO workspace_settings (workspace_id, locale, time_zone, notifications, updated_by)
       VALUES ($1, coalesce($2, 'en'), coalesce($3, 'UTC'), coalesce($4::jsonb, '{}'), $5)
       ON CONFLICT (workspace_id) DO UPDATE SET
         locale = coalesce($2, workspace_settings.locale),
         time_zone = coalesce($3, workspace_settings.time_zone),
         notifications = workspace_settings.notifications || coalesce($4::jsonb, '{}'),
         updated_at = now(), updated_by = $5`,
      [
        workspaceId,
        locale ?? null,
        timeZone ?? null,
        change.notifications ? JSON.stringify(change.notifications) : null,
        userId,
      ],
    );
    return getSettings(db, workspaceId);
  });
}

/**
 * What a mail the platform sends a workspace's admins is about: a category of the preferences, or
 * `always` for the notices nobody can turn off: security and service notices (a suspension and what
 * it stops, an invitation, an e-mail or password change, a session ended).
 */
export type NotificationCategory = keyof NotificationPreferences | 'always';

/**
 * Whether a workspace wants a notification of this category, asked by each sender when the mail
 * goes out (dunning: `billing`; webhook alerts: `integrations`), so a change of the settings counts
 * from the next mail. `always` is always wanted.
 */
export async function wantsNotification(
  db: pg.Pool | pg.PoolClient,
  workspaceId: string,
  category: NotificationCategory,
): Promise<boolean> {
  if (category === 'always') return true;
  return (await getSettings(db, workspaceId)).notifications[category];
}
