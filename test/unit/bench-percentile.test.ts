/** The benches' percentiles are the anchor harness's (nearest rank at ⌊q·n⌋), so figures set side by side mean the same. */
import { describe, expect, it } from 'vitest';
import { percentile } from '../bench/percentile.js';

describe('bench percentile', () => {
  it('puts p99 on the first of the 20 retried deliveries out of 2,000, as the anchor harness does', () => {
    const fast = Array.from({ length: 1_980 }, (_, i) => 10 + i / 1_000);
    const retried = Array.from({ length: 20 }, (_, i) => 5_000 + i);
    expect(percentile([...fast, ...retried], 0.99)).toBe(5_000);
  });

  it('takes the upper median of an even count and the last element for q = 1', () => {
    expect(percentile([1, 2, 3, 4], 0.5)).toBe(3);
    expect(percentile([1, 2, 3, 4], 1)).toBe(4);
  });

  it('is NaN for no samples', () => {
    expect(percentile([], 0.5)).toBeNaN();
  });
});
