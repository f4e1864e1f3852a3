/**
 * A private Zipkin on loopback (scripts/local-servers.ts): the trace store of `npm run dev` and the
 * tests, keeping spans in memory (they are gone when it stops). Zipkin 3.5.1's executable jar is
 * fetched once by `npm run bootstrap` into the cache folder (zipkinCacheDir) and runs on Java 17+.
 * The platform sends it spans with OTEL_TRACES_EXPORTER=zipkin (lib/tracing.ts); its UI shows a
 * trace at /zipkin/traces/<traceId>, its API at /api/v2/trace/<traceId>.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManagedProcess } from './managed-process.js';

export const ZIPKIN_VERSION = '3.5.1';
export const zipkinCacheDir = path.join(
  process.env.XDG_CACHE_HOME ?? path.join(homedir(), '.cache'),
  'plana',
  `zipkin-${ZIPKIN_VERSION}`,
);

/** The executable jar: $ZIPKIN_JAR or the project's cached copy. */
export function findZipkin(): string {
  const candidates = [process.env.ZIPKIN_JAR, path.join(zipkinCacheDir, `zipkin-server-${ZIPKIN_VERSION}-exec.jar`)];
  for (const c of candidates) if (c && existsSync(c)) return c;
  throw new Error(`Zipkin ${ZIPKIN_VERSION} not found in ${zipkinCacheDir}; run \`npm run bootstrap\` first.`);
}

export interface ZipkinServer {
  /** Zipkin's base URL, e.g. http://127.0.0.1:9411. */
  url: string;
  /** The settings that point the platform's tracing and its trace links at this Zipkin. */
  env: {
    OTEL_TRACES_EXPORTER: 'zipkin';
    OTEL_EXPORTER_ZIPKIN_ENDPOINT: string;
    TRACE_UI_URL: string;
  };
  stop(): Promise<void>;
}

/** How long Zipkin may take to report UP (a JVM's start: about 5 s idle, more on two busy cores). */
const START_TIMEOUT_MS = 120_000;

/** Zipkin on 127.0.0.1:`port` (in-memory storage), its log and pid file under `dir`. */
export async function startZipkin(opts: { dir: string; port: number }): Promise<ZipkinServer> {
  mkdirSync(opts.dir, { recursive: true });
  const args = [
    // a small heap and the quick start of a short-lived local server
    '-Xms32m',
    '-Xmx256m',
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-jar',
    findZipkin(),
    `--armeria.ports[0].port=${opts.port}`,
    '--armeria.ports[0].ip=127.0.0.1',
    '--armeria.ports[0].protocols=http',
  ];
  const proc = new ManagedProcess(
    'zipkin',
    'java',
    args,
    path.join(opts.dir, 'zipkin.log'),
    path.join(opts.dir, 'zipkin.pid'),
  );
  const url = `http://127.0.0.1:${opts.port}`;
  await waitForHealth(url, proc);
  return {
    url,
    env: {
      OTEL_TRACES_EXPORTER: 'zipkin',
      OTEL_EXPORTER_ZIPKIN_ENDPOINT: `${url}/api/v2/spans`,
      TRACE_UI_URL: `${url}/zipkin/traces`,
    },
    stop: () => proc.stop(),
  };
}

/** Zipkin's port opens before its storage is ready: it is ready when /health says UP. */
async function waitForHealth(url: string, proc: ManagedProcess): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (proc.exited) throw new Error(`zipkin exited early; see ${proc.logFile}`);
    const health = await fetch(`${url}/health`).then(
      (res) => (res.ok ? (res.json() as Promise<{ status?: string }>) : undefined),
      () => undefined,
    );
    if (health?.status === 'UP') return;
    if (Date.now() > deadline)
      throw new Error(`zipkin was not UP within ${START_TIMEOUT_MS / 1000} s; see ${proc.logFile}`);
    await sleep(250);
  }
}
