/**
 * The execution-log rows recorded but not written yet (domain/access/execution-log.ts), held in
 * columns: the numbers in typed arrays, the texts in one array. A busy API records thousands of
 * calls between two flushes; an object per call would stay alive until the flush, so every
 * young-generation collection in between copies it and then moves it to the old generation. In
 * columns a call leaves no object behind (its texts are the key's and the route's own, kept anyway,
 * and its request id). The rows leave as COPY text in one Buffer: no batch-sized string to build,
 * flatten and encode again on its way to the socket.
 */
import type { ExecutionRecord } from './execution-log.js';

/** The texts of a row, in column order after occurred_at. */
const TEXTS = 5;

/** COPY's text format: tab-separated, with backslash, tab and line breaks escaped. */
const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const SPECIAL = /[\\\t\n\r]/;
const copyField = (v: string) => (SPECIAL.test(v) ? v.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!) : v);

export class PendingRows {
  private occurredAt: Float64Array;
  private latencyMs: Float64Array;
  private status: Uint16Array;
  /** workspaceId, keyPrefix, method, route, requestId of each row, one after the other. */
  private texts: string[];
  length = 0;

  constructor(private capacity = 1024) {
    this.occurredAt = new Float64Array(capacity);
    this.latencyMs = new Float64Array(capacity);
    this.status = new Uint16Array(capacity);
    this.texts = new Array<string>(capacity * TEXTS);
  }

  static of(records: ExecutionRecord[]): PendingRows {
    const rows = new PendingRows(Math.max(records.length, 1024));
    for (const r of records) rows.push(r);
    return rows;
  }

  push(r: ExecutionRecord): void {
    if (this.length === this.capacity) this.grow();
    const i = this.length++;
    this.occurredAt[i] = r.occurredAt;
    this.latencyMs[i] = r.latencyMs;
    this.status[i] = r.status;
    const t = i * TEXTS;
    this.texts[t] = r.workspaceId;
    this.texts[t + 1] = r.keyPrefix;
    this.texts[t + 2] = r.method;
    this.texts[t + 3] = r.route;
    this.texts[t + 4] = r.requestId;
  }

  /** The rows as records again (to keep them for the next attempt when a write failed). */
  records(): ExecutionRecord[] {
    const out: ExecutionRecord[] = [];
    for (let i = 0; i < this.length; i++) {
      const t = i * TEXTS;
      out.push({
        occurredAt: this.occurredAt[i]!,
        workspaceId: this.texts[t]!,
        keyPrefix: this.texts[t + 1]!,
        method: this.texts[t + 2]!,
        route: this.texts[t + 3]!,
        status: this.status[i]!,
        latencyMs: this.latencyMs[i]!,
        requestId: this.texts[t + 4]!,
      });
    }
    return out;
  }

  /**
   * The rows in COPY's text format, as bytes. A second's ISO 8601 prefix is built once for all its
   * rows, and the middle of a row (workspace, key prefix, method, route) once for a run of rows that
   * share it (a busy key calling one route).
   */
  copyText(): Buffer {
    let out: Buffer = Buffer.allocUnsafe(Math.max(this.length * 160, 1024));
    let at = 0;
    let second = NaN;
    let prefix = '';
    let middle = '';
    for (let i = 0; i < this.length; i++) {
      const t = i * TEXTS;
      if (i === 0 || !this.sameMiddle(t, t - TEXTS)) middle = this.middle(t);
      const ms = this.occurredAt[i]!;
      const s = Math.floor(ms / 1000);
      if (s !== second) {
        second = s;
        prefix = new Date(s * 1000).toISOString().slice(0, 20); // 2026-01-31T12:00:00.
      }
      const milli = String(Math.floor(ms) - s * 1000).padStart(3, '0');
      const row = `${prefix}${milli}Z${middle}${this.status[i]}\t${this.latencyMs[i]}\t${copyField(this.texts[t + 4]!)}\n`;
      // a UTF-8 character takes at most 3 bytes per UTF-16 code unit
      if (at + row.length * 3 > out.length) out = grown(out, at + row.length * 3);
      at += out.write(row, at, 'utf8');
    }
    return out.subarray(0, at);
  }

  private sameMiddle(t: number, previous: number): boolean {
    const x = this.texts;
    return (
      x[t] === x[previous] &&
      x[t + 1] === x[previous + 1] &&
      x[t + 2] === x[previous + 2] &&
      x[t + 3] === x[previous + 3]
    );
  }

  /** `\t<workspace>\t<key prefix>\t<method>\t<route>\t`, escaped. */
  private middle(t: number): string {
    const x = this.texts;
    return `\t${x[t]}\t${copyField(x[t + 1]!)}\t${copyField(x[t + 2]!)}\t${copyField(x[t + 3]!)}\t`;
  }

  private grow() {
    this.capacity *= 2;
    const occurredAt = new Float64Array(this.capacity);
    occurredAt.set(this.occurredAt);
    this.occurredAt = occurredAt;
    const latencyMs = new Float64Array(this.capacity);
    latencyMs.set(this.latencyMs);
    this.latencyMs = latencyMs;
    const status = new Uint16Array(this.capacity);
    status.set(this.status);
    this.status = status;
    this.texts.length = this.capacity * TEXTS;
  }
}

function grown(buffer: Buffer, atLeast: number): Buffer {
  const bigger = Buffer.allocUnsafe(Math.max(buffer.length * 2, atLeast));
  buffer.copy(bigger);
  return bigger;
}
