/**
 * A private Prometheus on loopback for `npm run dev` (Debian's `prometheus` package, which the
 * bootstrap installs for promtool): it scrapes the platform's metrics endpoints every few seconds
 * and evaluates the alerting rules of deploy/prometheus/alerts.yml, so a rule can be watched
 * firing (http://127.0.0.1:9090/alerts) against the running platform.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedProcess, waitForPort } from './managed-process.js';

/** The alerting and recording rules an operator loads (docs/operators.md, Alerts). */
export const ALERT_RULES = fileURLToPath(new URL('../deploy/prometheus/alerts.yml', import.meta.url));

export interface PrometheusServer {
  url: string;
  stop(): Promise<void>;
}

/** Prometheus under `dir` on `port`, scraping each `host:port` of `targets` (job `plana`) with `ruleFiles` loaded. */
export async function startPrometheus(opts: {
  dir: string;
  port: number;
  targets: string[];
  ruleFiles?: string[];
  scrapeInterval?: string;
}): Promise<PrometheusServer> {
  mkdirSync(path.join(opts.dir, 'data'), { recursive: true });
  const configFile = path.join(opts.dir, 'prometheus.yml');
  writeFileSync(configFile, JSON.stringify(prometheusConfig(opts), null, 2)); // YAML is a superset of JSON
  const proc = new ManagedProcess(
    'prometheus',
    'prometheus',
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(opts.dir, 'data')}`,
      '--storage.tsdb.retention.time=2d',
      `--web.listen-address=127.0.0.1:${opts.port}`,
    ],
    path.join(opts.dir, 'prometheus.log'),
    path.join(opts.dir, 'prometheus.pid'),
  );
  await waitForPort(opts.port, 30_000, proc);
  return { url: `http://127.0.0.1:${opts.port}`, stop: () => proc.stop() };
}

function prometheusConfig(opts: { targets: string[]; ruleFiles?: string[]; scrapeInterval?: string }) {
  const interval = opts.scrapeInterval ?? '5s';
  return {
    global: { scrape_interval: interval, evaluation_interval: interval },
    rule_files: opts.ruleFiles ?? [ALERT_RULES],
    scrape_configs: [{ job_name: 'plana', static_configs: [{ targets: opts.targets }] }],
  };
}
