/**
 * The kinds of value a setting of lib/config.ts has, each a zod schema: a port, a URL, a key, and a
 * duration (`30 days`, `5 minutes`, `2s`, `500ms`; a bare number is milliseconds) parsed to milliseconds.
 */
import { z } from 'zod';

export const port = z.coerce.number().int().min(1).max(65535);
export const url = z.string().url();
export const key = z.string().min(16, 'must be at least 16 characters');

const durationUnits: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

export const duration = z
  .string()
  .regex(
    /^\d+\s*(ms|s|sec|seconds?|m|min|minutes?|h|hours?|d|days?)?$/,
    'must be a duration such as "30 days", "5 minutes" or "2s"',
  )
  .transform((s) => {
    const [, n, unit = 'ms'] = /^(\d+)\s*(\w+)?$/.exec(s)!;
    const u = unit === 'ms' ? 'ms' : unit.startsWith('mi') || unit === 'm' ? 'm' : unit.charAt(0);
    return Number(n) * durationUnits[u]!;
  });
