/**
 * The alert rules (deploy/prometheus/alerts.yml): promtool's own checks and unit tests pass, every
 * alert has a test case and a runbook line in docs/operators.md, and every metric they read is one
 * the platform serves (a renamed metric fails here, not silently in production).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = path.resolve(import.meta.dirname, '../..');
const rulesDir = path.join(root, 'deploy/prometheus');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}
const rules = (parse(read('deploy/prometheus/alerts.yml')) as { groups: { rules: Rule[] }[] }).groups.flatMap(
  (g) => g.rules,
);
const alerts = rules.flatMap((r) => (r.alert ? [r.alert] : []));

const promtool = (...args: string[]) => execFileSync('promtool', args, { cwd: rulesDir, encoding: 'utf8' });

describe('the alert rules', () => {
  it('are valid rules and pass their promtool tests', { timeout: 60_000 }, () => {
    expect(promtool('check', 'rules', 'alerts.yml')).toContain('SUCCESS');
    expect(promtool('test', 'rules', 'alerts.test.yml')).toContain('SUCCESS');
  });

  it('each have a test case and a runbook line', () => {
    const tested = new Set(
      (
        parse(read('deploy/prometheus/alerts.test.yml')) as { tests: { alert_rule_test: { alertname: string }[] }[] }
      ).tests
        .flatMap((t) => t.alert_rule_test)
        .map((t) => t.alertname),
    );
    const operators = read('docs/operators.md');
    expect(alerts.filter((a) => !tested.has(a))).toEqual([]);
    expect(alerts.filter((a) => !operators.includes(`| \`${a}\` |`))).toEqual([]);
  });

  it('read only metrics the platform serves', () => {
    const recorded = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));
    const used = new Set(rules.flatMap((r) => r.expr.match(/\bplana[a-zA-Z0-9_:]*/g) ?? []));
    const served = ['lib/metrics.ts', 'worker/fleet-metrics.ts'].map(read).join('\n');
    expect([...used].filter((m) => !recorded.has(m) && !served.includes(`name: '${m}'`))).toEqual([]);
  });
});
