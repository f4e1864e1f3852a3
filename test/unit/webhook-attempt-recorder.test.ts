/**
 * The dispatcher's attempt recorder as a group commit: an attempt is written by the next statement
 * without waiting for a timer, and what answers while a statement runs goes into the following one
 * (the window in which a killed dispatcher would send a delivery again is one statement).
 */
import { describe, expect, it } from 'vitest';
import type { Pool } from '../../lib/db.js';
import { createLogger } from '../../lib/logger.js';
import type { RecordedAttempt } from '../../domain/webhooks/deliveries.js';
import { AttemptRecorder } from '../../services/webhooks/first-attempts.js';

/** A pool whose statements finish when the test says so; it keeps the message ids of each statement. */
function heldPool() {
  const statements: { messageIds: string[]; finish: () => void }[] = [];
  const pool = {
    query: (_sql: string, params: unknown[]) =>
      new Promise<void>((finish) => statements.push({ messageIds: params[1] as string[], finish })),
  } as unknown as Pool;
  return { pool, statements };
}

const attempt = (messageId: string): RecordedAttempt => ({
  endpointId: '00000000-0000-0000-0000-000000000001',
  messageId,
  trigger: 'dispatcher',
  attemptedAt: new Date(),
  status: 'delivered',
  result: { outcome: 'ok', statusCode: 204, durationMs: 1, error: null, headers: {}, excerpt: '', retryAfterMs: null },
});

const turn = () => new Promise((r) => setImmediate(r));

describe('the attempt recorder', () => {
  it('writes an attempt at once, and what answers meanwhile in the next statement, one statement at a time', async () => {
    const { pool, statements } = heldPool();
    const settled: string[] = [];
    const recorder = new AttemptRecorder(pool, createLogger({ name: 'test', level: 'silent' }), (a) =>
      settled.push(a.messageId),
    );
    const first = recorder.record(attempt('m1'));
    await turn();
    expect(statements.map((s) => s.messageIds)).toEqual([['m1']]); // no timer: written on the next turn
    const later = [recorder.record(attempt('m2')), recorder.record(attempt('m3'))];
    await turn();
    expect(statements).toHaveLength(1); // one statement at a time
    statements[0]!.finish();
    expect(await first).toBe(true);
    await turn();
    expect(statements.map((s) => s.messageIds)).toEqual([['m1'], ['m2', 'm3']]);
    const flushed = recorder.flush();
    statements[1]!.finish();
    await flushed;
    expect(await Promise.all(later)).toEqual([true, true]);
    expect(settled).toEqual(['m1', 'm2', 'm3']);
  });
});
