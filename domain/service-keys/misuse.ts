/**
 * Revoked keys still in use (§5.4 step 5): a consumer missed a rotation, or someone holds
 * an old key. The target that sees one answers 401 as for any bad key, logs a warning and records
 * the use here (at most once per key id per alert interval and process: the check itself never
 * writes). The worker's alerter (`startMisuseAlerter`) turns each recorded use into one alert mail
 * to the operators (notifications service) and one `service-key.revoked-key-used` CloudEvent
 * (events service), at most once per key id per interval, whichever replica saw it. Only ids and
 * names travel: never a key.
 */
import type pg from 'pg';
import { withTransaction, type Queryable } from '../../lib/db.js';
import type { Logger } from '../../lib/logger.js';
import { cloudEvent, publishEvent } from '../events/events.js';
import type { SecretStore } from './secret-store.js';

export const SERVICE_KEY_REVOKED_KEY_USED = 'service-key.revoked-key-used';

export interface RevokedKeyUse {
  keyId: string;
  caller: string;
  target: string;
}

/** A target saw `use.keyId` (revoked): marks it pending for the alerter. */
export async function recordRevokedKeyUse(db: Queryable, use: RevokedKeyUse): Promise<void> {
  await db.query(
    `INSERT INTO service_key_misuse (key_id, caller, target) VALUES ($1, $2, $3)
     ON CONFLICT (key_id) DO UPDATE SET last_seen_at = now(), reports = service_key_misuse.reports + 1, pending = true`,
    [use.keyId, use.caller, use.target],
  );
}

export interface MisuseRecord extends RevokedKeyUse {
  firstSeenAt: Date;
  lastSeenAt: Date;
  reports: number;
  alerts: number;
  alertedAt: Date | null;
  lastAlert: string | null;
}

export async function misuseRecord(db: Queryable, keyId: string): Promise<MisuseRecord | undefined> {
  const { rows } = await db.query<MisuseRecord>(
    `SELECT key_id AS "keyId", caller, target, first_seen_at AS "firstSeenAt", last_seen_at AS "lastSeenAt", reports::int AS reports,
            alerts, alerted_at AS "alertedAt", last_alert AS "lastAlert"
       FROM service_key_misuse WHERE key_id = $1`,
    [keyId],
  );
  return rows[0];
}

export interface MisuseAlerterOptions {
  pool: pg.Pool;
  /** Where the worker reads its keys for the notifications and events services. */
  secrets: SecretStore;
  caller: string;
  notificationsUrl: string;
  eventsUrl: string;
  /** The operators' address. */
  to: string;
  intervalMs: number;
  pollMs: number;
  log: Pick<Logger, 'warn' | 'error' | 'info'>;
}

/**
 * Sends the alerts that are due, one key id at a time (row locked while its alert goes out, so two
 * workers never send the same one). Each alert has an idempotency key `<type>:<keyId>:<n>`: a
 * retry after a crash between sending and recording sends nothing twice. Returns how many went out.
 */
export async function sendDueMisuseAlerts(opts: Omit<MisuseAlerterOptions, 'pollMs'>): Promise<number> {
  let sent = 0;
  for (;;) {
    const done = await withTransaction(opts.pool, async (db) => {
      const { rows } = await db.query<{
        key_id: string;
        caller: string;
        target: string;
        first_seen_at: Date;
        last_seen_at: Date;
        reports: string;
        alerts: number;
      }>(
        `SELECT key_id, caller, target, first_seen_at, last_seen_at, reports, alerts FROM service_key_misuse
          WHERE pending AND (alerted_at IS NULL OR alerted_at <= now() - $1 * interval '1 millisecond')
          ORDER BY last_seen_at LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [opts.intervalMs],
      );
      const row = rows[0];
      if (!row) return true;
      const n = row.alerts + 1;
      const id = `${SERVICE_KEY_REVOKED_KEY_USED}:${row.key_id}:${n}`;
      const data = {
        caller: row.caller,
        target: row.target,
        keyId: row.key_id,
        firstSeenAt: row.first_seen_at.toISOString(),
        lastSeenAt: row.last_seen_at.toISOString(),
        reports: Number(row.reports),
      };
      await sendAlertMail(opts, id, data);
      await publishEvent(
        { eventsUrl: opts.eventsUrl, apiKey: (await opts.secrets.current(opts.caller, 'events')).key },
        cloudEvent({
          id,
          source: '/plana/service-keys',
          type: SERVICE_KEY_REVOKED_KEY_USED,
          subject: `${row.caller}:${row.target}`,
          data,
        }),
      );
      await db.query(
        `UPDATE service_key_misuse SET pending = false, alerts = $2, alerted_at = now(), last_alert = $3 WHERE key_id = $1`,
        [row.key_id, n, id],
      );
      opts.log.warn({ alert: SERVICE_KEY_REVOKED_KEY_USED, ...data }, 'revoked service key used: alert sent');
      sent++;
      return false;
    });
    if (done) return sent;
  }
}

async function sendAlertMail(
  opts: Omit<MisuseAlerterOptions, 'pollMs'>,
  id: string,
  d: { caller: string; target: string; keyId: string; lastSeenAt: string; reports: number },
) {
  const res = await fetch(new URL('/v1/alert', opts.notificationsUrl), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-api-key': (await opts.secrets.current(opts.caller, 'notifications')).key,
      'idempotency-key': id,
    },
    body: JSON.stringify({
      to: opts.to,
      severity: 'critical',
      title: `Revoked service key ${d.keyId} used by ${d.caller} → ${d.target}`,
      message:
        `${d.target} refused the revoked key ${d.keyId} of ${d.caller} (last seen ${d.lastSeenAt}; reported ${d.reports} time(s)).\n` +
        `A consumer missed a rotation, or an old key is held by someone else. Check ${d.caller}'s secret, and rotate the pair ` +
        `at once if the key may be exposed: npm run cli -- rotate-key ${d.caller} ${d.target} --reason exposure`,
    }),
    signal: AbortSignal.timeout(15_000),
  });
  await res.arrayBuffer();
  if (!res.ok) throw new Error(`notifications service answered ${res.status}`);
}

/** Runs `sendDueMisuseAlerts` every `pollMs` until stopped; a failed round is logged and tried again. */
export function startMisuseAlerter(opts: MisuseAlerterOptions): { stop(): Promise<void> } {
  let stopped = false;
  let round: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    if (stopped) return;
    round = round.then(() =>
      sendDueMisuseAlerts(opts).catch((err: Error) =>
        opts.log.warn({ err: err.message }, 'revoked-key alerts not sent yet; retrying'),
      ),
    );
  }, opts.pollMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await round;
    },
  };
}
