/** Which Temporal `npm run dev` starts (scripts/local-temporal-cluster.ts `temporalKindOf`). */
import { expect, it } from 'vitest';
import { temporalKindOf } from '../../scripts/local-temporal-cluster.js';

it('is the dev server unless --temporal= or DEV_TEMPORAL says cluster; the flag wins over the variable', () => {
  expect(temporalKindOf([], undefined)).toBe('dev');
  expect(temporalKindOf(['--temporal=cluster'], undefined)).toBe('cluster');
  expect(temporalKindOf([], 'cluster')).toBe('cluster');
  expect(temporalKindOf(['--temporal=dev'], 'cluster')).toBe('dev');
});

it('refuses another value, naming where it came from and the two it takes', () => {
  expect(() => temporalKindOf(['--temporal=prod'], undefined)).toThrow(
    '--temporal must be "dev" (the Temporal dev server) or "cluster" (the production-shaped Temporal on PostgreSQL), not "prod".',
  );
  expect(() => temporalKindOf([], 'k8s')).toThrow(/^DEV_TEMPORAL must be .* not "k8s"\.$/);
});
