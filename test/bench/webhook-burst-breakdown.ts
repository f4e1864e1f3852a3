/**
 * Where a burst message's time goes, per stage, from what each step leaves behind: the bench's send
 * time, the stream entry's id (the events service's XADD, in ms), the message row's created_at (the
 * dispatcher's INSERT of its read), the first attempt's attempted_at (its lane gave it a slot and
 * the POST starts), and the receiver's time. Every clock is this machine's wall clock.
 */
import type { Redis } from 'ioredis';
import type { Pool } from '../../lib/db.js';
import { messageIdOf } from '../../domain/webhooks/signing.js';
import { percentile } from './percentile.js';

export interface BurstTimes {
  /** Wall-clock ms of each event's send, by message id. */
  sentAt: Map<string, number>;
  /** Wall-clock ms of each message's first verified delivery at the receiver, by message id. */
  deliveredAt: Map<string, number>;
  /** TCP connections the receiver accepted during the burst (each costs both sides a handshake). */
  connections: number;
}

type Stage = { name: string; ms: number[] };

/** XADD time of each message of the stream (entry id = ms-seq), by message id; only the ones asked for. */
async function xaddTimes(redis: Redis, stream: string, wanted: Set<string>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  let cursor = '-';
  for (;;) {
    const entries = (await redis.xrange(stream, cursor, '+', 'COUNT', 5000)) as [string, string[]][];
    for (const [id, fields] of entries) {
      const ev = JSON.parse(fields[fields.indexOf('event') + 1] ?? 'null') as { source?: string; id?: string } | null;
      const messageId = ev?.source && ev.id ? messageIdOf(ev.source, ev.id) : undefined;
      if (messageId && wanted.has(messageId)) out.set(messageId, Number(id.split('-')[0]));
    }
    if (entries.length < 5000) return out;
    cursor = `(${entries.at(-1)![0]}`;
  }
}

type Recorded = { id: string; recorded: number; attempted: number; answeredAfter: number };

/** Each message's INSERT time, and its first attempt's start and duration (waits for the dispatcher's batched recording). */
async function recordedTimes(pool: Pool, ids: string[]): Promise<Recorded[]> {
  for (let tries = 0; ; tries++) {
    const { rows } = await pool.query<{ id: string; recorded: string; attempted: string | null; duration: number }>(
      `SELECT m.id, extract(epoch FROM m.created_at) * 1000 AS recorded,
              extract(epoch FROM a.attempted_at) * 1000 AS attempted, a.duration_ms AS duration
         FROM webhook_messages m
         LEFT JOIN LATERAL (SELECT attempted_at, duration_ms FROM webhook_attempts
                             WHERE message_id = m.id ORDER BY attempted_at LIMIT 1) a ON true
        WHERE m.id = ANY($1)`,
      [ids],
    );
    if (rows.every((r) => r.attempted !== null) || tries >= 50) {
      return rows.flatMap((r) =>
        r.attempted === null
          ? []
          : [{ id: r.id, recorded: Number(r.recorded), attempted: Number(r.attempted), answeredAfter: r.duration }],
      );
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The rate at which a stage let messages through: count over first → last, per second. */
const rateOf = (times: number[]) => {
  if (times.length < 2) return NaN;
  const sorted = [...times].sort((a, b) => a - b);
  return (sorted.length - 1) / ((sorted.at(-1)! - sorted[0]!) / 1000);
};

/** Printed lines: p50/p99 of each stage and each stage's throughput over the burst. */
export async function burstBreakdown(pool: Pool, redis: Redis, stream: string, times: BurstTimes): Promise<string[]> {
  const ids = [...times.deliveredAt.keys()];
  const xadd = await xaddTimes(redis, stream, new Set(ids));
  const rows = await recordedTimes(pool, ids);
  const db = new Map(rows.map((r) => [r.id, r]));
  const stages: Stage[] = [
    { name: 'intake (send → XADD)', ms: [] },
    { name: 'stream (XADD → recorded)', ms: [] },
    { name: 'lane (recorded → POST)', ms: [] },
    { name: 'HTTP (POST → receiver)', ms: [] },
  ];
  for (const id of ids) {
    const sent = times.sentAt.get(id);
    const added = xadd.get(id);
    const row = db.get(id);
    const received = times.deliveredAt.get(id)!;
    if (sent === undefined || added === undefined || !row) continue;
    const points = [sent, added, row.recorded, row.attempted, received];
    stages.forEach((s, i) => s.ms.push(points[i + 1]! - points[i]!));
  }
  const fmt = (ms: number) => (Math.abs(ms) < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(2)} s`);
  const rates = [
    `sent ${rateOf([...times.sentAt.values()]).toFixed(0)}/s`,
    `XADDed ${rateOf([...xadd.values()]).toFixed(0)}/s`,
    `recorded ${rateOf(rows.map((r) => Number(r.recorded))).toFixed(0)}/s`,
    `POSTed ${rateOf(rows.map((r) => Number(r.attempted))).toFixed(0)}/s`,
    `delivered ${rateOf([...times.deliveredAt.values()]).toFixed(0)}/s`,
  ];
  // Little's law: the first attempts in flight on average while the burst was being POSTed
  const posted = rows.map((r) => r.attempted).sort((a, b) => a - b);
  const postSpan = (posted.at(-1)! - posted[0]! + rows.reduce((m, r) => Math.max(m, r.answeredAfter), 0)) / 1000;
  const meanInFlight = rows.reduce((n, r) => n + r.answeredAfter, 0) / 1000 / postSpan;
  const answered = rows.map((r) => r.answeredAfter).sort((a, b) => a - b);
  return [
    `  POST → answered   p50 ${fmt(percentile(answered, 0.5))} p99 ${fmt(percentile(answered, 0.99))}; ${meanInFlight.toFixed(0)} in flight on average while POSTing (the lane allows WEBHOOK_ENDPOINT_CONCURRENCY) over ${times.connections} connections`,
    `  where time goes   ${stages
      .map((s) => {
        const sorted = [...s.ms].sort((a, b) => a - b);
        return `${s.name} p50 ${fmt(percentile(sorted, 0.5))} p99 ${fmt(percentile(sorted, 0.99))}`;
      })
      .join('; ')}`,
    `  stage rates       ${rates.join(', ')} (first → last of the burst)`,
  ];
}
