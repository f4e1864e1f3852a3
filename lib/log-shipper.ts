/**
 * A process's log lines to the log store as well as to standard output: when LOG_STORE_URL is in
 * the environment, lib/logger.ts and the servers' options (lib/http-server-options.ts) write
 * through logDestination(service). A line arrives here after pino has serialized and redacted it
 * (redactPaths, serializers), so what leaves is what standard output shows.
 *
 * Lines wait in a bounded buffer and go out in batches; the store being slow or down never blocks
 * or fails the service: a batch the store does not take, and a line that finds the buffer full, is
 * dropped and counted (plana_log_lines_dropped_total).
 */
import pino, { type DestinationStream } from 'pino';
import client from 'prom-client';
import { insertJsonLines, type JsonLineFields } from './log-store.js';

const dropped = new client.Counter({
  name: 'plana_log_lines_dropped_total',
  help: 'Log lines not sent to the log store (the buffer full, or the store did not take a batch); standard output has them',
  labelNames: ['service', 'reason'],
});

export interface LogShipperOptions {
  /** Lines held at most while the store is slow or down (the rest are dropped). */
  maxLines?: number;
  /** A batch goes out when it has this many lines, or every flushMs. */
  batchLines?: number;
  flushMs?: number;
}

/** Ships pino's JSON lines to the store, each with `service` as its stream. */
export class LogShipper implements DestinationStream {
  private buffer: string[] = [];
  private sending = false;
  private readonly timer: NodeJS.Timeout;
  private readonly fields: JsonLineFields;
  private readonly maxLines: number;
  private readonly batchLines: number;

  constructor(
    private readonly storeUrl: string,
    private readonly service: string,
    opts: LogShipperOptions = {},
  ) {
    this.maxLines = opts.maxLines ?? 10_000;
    this.batchLines = opts.batchLines ?? 500;
    this.fields = { msgField: 'msg', timeField: 'time', streamFields: ['service'], extraFields: { service } };
    this.timer = setInterval(() => void this.flush(), opts.flushMs ?? 1_000);
    this.timer.unref();
  }

  write(line: string): void {
    if (this.buffer.length >= this.maxLines) {
      dropped.inc({ service: this.service, reason: 'buffer_full' });
      return;
    }
    this.buffer.push(line);
    if (this.buffer.length >= this.batchLines) void this.flush();
  }

  /** Sends what is buffered (one batch at a time); resolves when that attempt is over, never rejects. */
  async flush(): Promise<void> {
    if (this.sending || this.buffer.length === 0) return;
    this.sending = true;
    const batch = this.buffer;
    this.buffer = [];
    try {
      await insertJsonLines(this.storeUrl, batch.join(''), this.fields);
    } catch {
      dropped.inc({ service: this.service, reason: 'store_unreachable' }, batch.length);
    } finally {
      this.sending = false;
    }
  }

  close(): void {
    clearInterval(this.timer);
  }
}

/** Every line to `out` (standard output) and to the shipper. */
export function teeToLogStore(shipper: LogShipper, out: DestinationStream = pino.destination(1)): DestinationStream {
  return {
    write(line: string) {
      out.write(line);
      shipper.write(line);
    },
  };
}

/**
 * Where a service's log lines go: standard output and, when LOG_STORE_URL is in the environment,
 * the log store with `service` as the stream; undefined (pino's default, standard output) otherwise.
 */
export function logDestination(service: string): DestinationStream | undefined {
  const url = process.env.LOG_STORE_URL;
  return url ? teeToLogStore(new LogShipper(url, service)) : undefined;
}
