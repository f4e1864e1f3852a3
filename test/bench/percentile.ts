/**
 * Nearest-rank percentile the way the anchor harness computes it (../shared/anchors/webhooks/receiver.mjs):
 * index ⌊q·n⌋ of the ascending list, capped at the last. With 20 retried messages of 2,000, p99 is
 * the first retried one, as on Svix's side; a ⌈q·n⌉−1 index would land just below them.
 */
export function percentile(ascending: readonly number[], q: number): number {
  if (ascending.length === 0) return NaN;
  return ascending[Math.min(ascending.length - 1, Math.floor(q * ascending.length))]!;
}
