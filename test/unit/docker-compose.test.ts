/**
 * docker-compose.yml cannot run on these machines (no Docker engine), so this test checks that it
 * is consistent with the code: services it references exist, every platform container gets a
 * valid configuration that never falls back to a loopback address or a development secret, and
 * every command it runs is a file in the repository. The image (Dockerfile) holds production code
 * only: each command's file, and every module it imports, is in a folder the image copies, and
 * those are neither the stand-ins (sandbox/), the development scripts (scripts/) nor the tests.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configSchema, parseConfig } from '../../lib/config.js';

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string | number>;
  depends_on?: Record<string, unknown>;
  healthcheck?: unknown;
  restart?: string;
}

const root = path.resolve(import.meta.dirname, '../..');
const compose = parse(readFileSync(path.join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const platform = Object.entries(services).filter(([, s]) => s.image?.startsWith('plana/'));

/** What `docker compose` does with `${VAR:-default}` / `${VAR:?message}` given a filled-in .env. */
const interpolate = (value: string | number) =>
  String(value).replace(/\$\{(\w+)(?::-([^}]*)|:\?[^}]*)?\}/g, (_m, name: string, fallback?: string) => {
    if (fallback !== undefined) return fallback;
    if (name === 'SECRETS_KEY') return Buffer.alloc(32, 7).toString('base64');
    if (name === 'CHAT_TEAM_ID') return 'abcdefghijklmnopqrstuvwxyz';
    if (name === 'STRIPE_WEBHOOK_SECRET') return 'whsec_from-the-secret-store-0123456789';
    if (name === 'BANKING_BANKS') return 'example-bank=https://xs2a.bank.example/psd2';
    return `${name.toLowerCase()}-from-the-secret-store-0123456789`;
  });

/** The folders the final image stage copies from the build context (`COPY <folder> ./<folder>`). */
const imageFolders = [
  ...readFileSync(path.join(root, 'Dockerfile'), 'utf8')
    .split(/^FROM /m)
    .at(-1)!
    .matchAll(/^COPY (?!--from)([\w-]+) \.\/\1$/gm),
].map((m) => m[1]!);

/** Every module of the repository `entry` reaches through relative imports (static, export-from, import()). */
function modulesReached(entry: string, seen = new Set<string>()): Set<string> {
  if (seen.has(entry)) return seen;
  seen.add(entry);
  const code = readFileSync(entry, 'utf8');
  for (const [, spec] of code.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = path.resolve(path.dirname(entry), spec!).replace(/\.js$/, '.ts');
    if (existsSync(target) && target.endsWith('.ts')) modulesReached(target, seen);
    else if (!existsSync(target)) seen.add(target);
  }
  return seen;
}

describe('the image', () => {
  it('copies production code only: no stand-ins, no development scripts, no tests', () => {
    expect(imageFolders).toEqual(expect.arrayContaining(['lib', 'domain', 'api', 'worker', 'services', 'cli']));
    expect(imageFolders.filter((f) => ['sandbox', 'scripts', 'test'].includes(f))).toEqual([]);
  });
});

describe('docker-compose.yml', () => {
  it('runs the platform processes and the real servers', () => {
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['postgresql', 'redis', 'temporal', 'temporal-ui', 'api', 'worker', 'notifications']),
    );
    expect(platform.map(([name]) => name)).toEqual(
      expect.arrayContaining(['api', 'worker', 'notifications', 'banking', 'migrate']),
    );
  });

  it.each(Object.entries(services))('%s depends only on services that exist', (_name, service) => {
    for (const dep of Object.keys(service.depends_on ?? {})) expect(Object.keys(services)).toContain(dep);
  });

  it.each(Object.entries(services).filter(([n, s]) => s.restart !== 'no' && n !== 'temporal-ui' && n !== 'mail'))(
    '%s has a health check',
    (_name, service) => expect(service.healthcheck).toBeDefined(),
  );

  it('pins every image to a version', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.image, name).toMatch(/:[\w.-]+$/);
      expect(s.image, name).not.toMatch(/:latest$/);
    }
  });

  describe.each(platform)('%s', (_name, service) => {
    const env = Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(v)]));

    it('runs a file that exists', () => {
      const file = service.command?.find((part) => part.endsWith('.ts'));
      expect(file).toBeDefined();
      expect(existsSync(path.join(root, file!))).toBe(true);
    });

    it('runs a file the image holds, and so is every module it imports', () => {
      const file = service.command!.find((part) => part.endsWith('.ts'))!;
      const outside = [...modulesReached(path.join(root, file))]
        .map((m) => path.relative(root, m))
        .filter((m) => !imageFolders.includes(m.split(path.sep)[0]!));
      expect(outside).toEqual([]);
    });

    it('sets only variables the configuration knows', () => {
      const known = Object.keys(configSchema.shape);
      expect(Object.keys(env).filter((k) => !known.includes(k))).toEqual([]);
    });

    it('gets a configuration that parses', () => {
      expect(() => parseConfig(env)).not.toThrow();
    });

    it('never falls back to a loopback address or a development secret', () => {
      const defaults = parseConfig({}) as Record<string, unknown>;
      const localOnly = Object.entries(defaults)
        .filter(([, v]) => {
          const s = JSON.stringify(v);
          return (
            /127\.0\.0\.1|localhost/.test(s) || /"dev-/.test(s) || s.includes('dev_only') || s.includes('ZGV2LW9ubHk')
          );
        })
        .map(([k]) => k);
      expect(localOnly.length).toBeGreaterThan(5);
      expect(localOnly.filter((k) => !(k in env))).toEqual([]);
    });

    it('reaches the other containers by their service names', () => {
      const cfg = parseConfig(env);
      for (const u of [
        cfg.DATABASE_URL,
        cfg.ERP_DATABASE_URL,
        cfg.REDIS_URL,
        cfg.NOTIFICATIONS_URL,
        cfg.EVENTS_URL,
        cfg.ACCOUNT_API_URL,
        cfg.BANKING_URL,
        `tcp://${cfg.TEMPORAL_ADDRESS}`,
      ]) {
        expect(Object.keys(services)).toContain(new URL(u).hostname);
      }
    });
  });
});
