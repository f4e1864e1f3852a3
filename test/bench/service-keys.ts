/**
 * `npm run bench:service-keys`: the cost of one service-key check on the target, in µs per check.
 *
 *   before  keyMatches(given, accepted): the configured plaintext list, every accepted key hashed
 *           again on every request (two keys during a rotation)
 *   after   AcceptedKeyTable.identify (what ServiceKeyVerifier does per request): one SHA-256 of the
 *           given key, a map look-up, timingSafeEqual, and the in-memory usage update
 *
 * No I/O in either (the verifier's reloads and usage flushes happen off the request path), so this
 * runs without servers. BENCH_CHECKS (default 200000) sets the number of checks per case.
 */
import { performance } from 'node:perf_hooks';
import { generateServiceKey, hashServiceKey, keyMatches } from '../../domain/service-keys/service-keys.js';
import { AcceptedKeyTable } from '../../domain/service-keys/verifier.js';

const N = Number(process.env.BENCH_CHECKS ?? 200_000);

function time(label: string, check: () => unknown): number {
  for (let i = 0; i < Math.min(N, 20_000); i++) check(); // warm up
  const t0 = performance.now();
  for (let i = 0; i < N; i++) check();
  const us = ((performance.now() - t0) * 1000) / N;
  console.log(`  ${label.padEnd(58)} ${us.toFixed(2).padStart(7)} µs/check`);
  return us;
}

function table(keys: string[]) {
  const t = new AcceptedKeyTable();
  t.replace(keys.map((k, i) => ({ keyId: `sk_${i.toString(16).padStart(8, '0')}`, caller: `caller-${i}`, state: 'current' as const, hash: hashServiceKey(k) })));
  return t;
}

const one = [generateServiceKey()];
const two = [generateServiceKey(), generateServiceKey()];
const many = Array.from({ length: 20 }, generateServiceKey);
const unknown = generateServiceKey();

console.log(`Service-key check on the target, ${N} checks per case (Node ${process.version}):\n`);
console.log('before: accepted keys from configuration (keyMatches)');
const b1 = time('1 accepted key, valid', () => keyMatches(one[0]!, one));
const b2 = time('2 accepted keys (a rotation), valid', () => keyMatches(two[1]!, two));
time('2 accepted keys, unknown key', () => keyMatches(unknown, two));
const b20 = time('20 accepted keys (many callers), valid', () => keyMatches(many[7]!, many));

console.log('\nafter: the registry, in memory (ServiceKeyVerifier / AcceptedKeyTable.identify)');
const t1 = table(one);
const t2 = table(two);
const t20 = table(many);
const a1 = time('1 accepted key, valid', () => t1.identify(one[0]!));
const a2 = time('2 accepted keys (pending + current), valid', () => t2.identify(two[1]!));
time('2 accepted keys, unknown key', () => t2.identify(unknown));
const a20 = time('20 accepted keys (many callers), valid', () => t20.identify(many[7]!));

console.log(`\nafter / before: 1 key ${(a1 / b1).toFixed(2)}×, 2 keys ${(a2 / b2).toFixed(2)}×, 20 keys ${(a20 / b20).toFixed(2)}×`);
