import { expect, it } from 'vitest';
import { describeDuration } from '../../lib/durations.js';

it('describes a duration in its largest fitting unit', () => {
  expect(describeDuration(5 * 86_400_000)).toBe('5 days');
  expect(describeDuration(86_400_000)).toBe('1 day');
  expect(describeDuration(36 * 3_600_000)).toBe('1.5 days');
  expect(describeDuration(3 * 3_600_000)).toBe('3 h');
  expect(describeDuration(90_000)).toBe('1.5 min');
  expect(describeDuration(2_000)).toBe('2 s');
  expect(describeDuration(250)).toBe('250 ms');
  expect(describeDuration(0)).toBe('0 ms');
});
