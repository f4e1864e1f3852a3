import { describe, expect, it } from 'vitest';
import { PendingRows } from '../../domain/access/execution-log-rows.js';
import type { ExecutionRecord } from '../../domain/access/execution-log.js';

const at = Date.parse('2026-11-27T08:00:00.000Z');
const row = (i: number, over: Partial<ExecutionRecord> = {}): ExecutionRecord => ({
  occurredAt: at + i * 7,
  workspaceId: '6dee2056-7a05-4353-b62b-6ad71d023b6d',
  keyPrefix: 'ws_live_ABC',
  method: 'GET',
  route: '/api/portal/odoo/:slug/kpis',
  status: 200,
  latencyMs: 0.25,
  requestId: `req-${i}`,
  ...over,
});

describe('execution-log rows waiting for their flush', () => {
  it('writes every row as one COPY text line, in order, past the first capacity', () => {
    const rows = new PendingRows(4);
    for (let i = 0; i < 10; i++) rows.push(row(i, i === 5 ? { route: '/api/portal/apikeys/self', status: 429 } : {}));
    const lines = rows.copyText().toString('utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(10);
    expect(lines[0]).toBe(
      '2026-11-27T08:00:00.000Z\t6dee2056-7a05-4353-b62b-6ad71d023b6d\tws_live_ABC\tGET\t/api/portal/odoo/:slug/kpis\t200\t0.25\treq-0',
    );
    // a row whose route differs, and the rows after it, carry their own route
    expect(lines[5]).toBe(
      '2026-11-27T08:00:00.035Z\t6dee2056-7a05-4353-b62b-6ad71d023b6d\tws_live_ABC\tGET\t/api/portal/apikeys/self\t429\t0.25\treq-5',
    );
    expect(lines[6]).toContain('\t/api/portal/odoo/:slug/kpis\t200\t');
    expect(lines[9]).toMatch(/^2026-11-27T08:00:00\.063Z\t.*\treq-9$/);
  });

  it('escapes tabs, line breaks and backslashes, and keeps text that is not ASCII whole', () => {
    const rows = new PendingRows(1);
    rows.push(row(0, { route: '/odd\tpath\nwith\\ and é ✓ 𝄞', requestId: 'req\\1' }));
    expect(rows.copyText().toString('utf8')).toBe(
      '2026-11-27T08:00:00.000Z\t6dee2056-7a05-4353-b62b-6ad71d023b6d\tws_live_ABC\tGET\t/odd\\tpath\\nwith\\\\ and é ✓ 𝄞\t200\t0.25\treq\\\\1\n',
    );
  });

  it('gives its rows back as they were recorded (kept for the next attempt when a write fails)', () => {
    const recorded = Array.from({ length: 1500 }, (_, i) => row(i, { status: 200 + (i % 3), latencyMs: i / 8 }));
    expect(PendingRows.of(recorded).records()).toEqual(recorded);
  });
});
