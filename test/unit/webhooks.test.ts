import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../lib/config.js';
import { retryDelay } from '../../domain/webhooks/attempt-delivery.js';
import { AddressPolicy } from '../../domain/webhooks/addresses.js';
import { parseRetryAfter } from '../../domain/webhooks/http-sender.js';

const settings = {
  scheduleMs: [5_000, 300_000],
  jitter: 0.2,
  retryAfterMinMs: 1_000,
  retryAfterMaxMs: 3_600_000,
  slowDownMinMs: 60_000,
};
const fail = { outcome: 'http-status' as const, statusCode: 500, retryAfterMs: null, error: 'answered 500' };

describe('webhook retry schedule', () => {
  it('spans more than a day by default (Svix: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h)', () => {
    const schedule = parseConfig({}).WEBHOOK_RETRY_SCHEDULE;
    expect(schedule.reduce((a, b) => a + b, 0)).toBeGreaterThan(24 * 3_600_000);
    expect(schedule).toHaveLength(7);
  });
  it('jitters each delay within ± the jitter and stops when the schedule is spent', () => {
    expect(retryDelay(settings, 0, fail, () => 0)).toBe(4_000);
    expect(retryDelay(settings, 0, fail, () => 1)).toBe(6_000);
    expect(retryDelay(settings, 2, fail, () => 0.5)).toBeUndefined();
  });
  it('honours Retry-After within the clamp, and waits at least a minute after 429 or a timeout', () => {
    expect(retryDelay(settings, 0, { ...fail, statusCode: 503, retryAfterMs: 120_000 }, () => 0.5)).toBe(120_000);
    expect(retryDelay(settings, 0, { ...fail, statusCode: 503, retryAfterMs: 86_400_000 }, () => 0.5)).toBe(3_600_000);
    expect(retryDelay(settings, 0, { ...fail, statusCode: 429 }, () => 0.5)).toBe(60_000);
    expect(retryDelay(settings, 0, { ...fail, statusCode: null, outcome: 'timeout' }, () => 0.5)).toBe(60_000);
  });
  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('30')).toBe(30_000);
    expect(parseRetryAfter(new Date(Date.now() + 10_000).toUTCString(), Date.now())).toBeGreaterThan(8_000);
    expect(parseRetryAfter('soon')).toBeNull();
  });
});

describe('webhook address policy', () => {
  it('refuses private, loopback, link-local, CGNAT, metadata and mapped addresses unless allow-listed', () => {
    const policy = new AddressPolicy('127.0.0.1/32');
    for (const ip of [
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '127.0.0.2',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      'fd00:ec2::254',
      'fe80::1',
      '::ffff:10.0.0.1',
    ]) {
      expect(policy.refusal(ip), ip).toBeDefined();
    }
    for (const ip of ['127.0.0.1', '93.184.216.34', '2606:4700::1111']) expect(policy.refusal(ip), ip).toBeUndefined();
  });
});
