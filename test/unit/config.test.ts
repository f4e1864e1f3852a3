import { describe, expect, it } from 'vitest';
import { ConfigError, DEVELOPMENT_DEFAULT_SECRETS, parseConfig } from '../../lib/config.js';
import { PRODUCTION } from '../support/production-config.js';
import { urlProblems } from '../../domain/webhooks/addresses.js';
import { addressPolicy } from '../../domain/webhooks/delivery-retries.js';

describe('configuration', () => {
  it('gives every variable a local default', () => {
    const cfg = parseConfig({});
    expect(cfg.API_PORT).toBe(3000);
    expect(cfg.NOTIFICATIONS_PORT).toBe(8080);
    expect(cfg.TEMPORAL_ADDRESS).toBe('127.0.0.1:7233');
    // no service key in configuration: targets read the registry, consumers the secret store
    expect(cfg.OPS_API_KEY).toBeUndefined();
    expect(Object.keys(cfg).filter((k) => /ACCEPTED_KEYS|_API_KEY$/.test(k) && k !== 'OPS_API_KEY')).toEqual([]);
  });

  it('names each bad variable in one error', () => {
    let error: unknown;
    try {
      parseConfig({ API_PORT: 'eighty', DATABASE_URL: 'not a url', OPS_API_KEY: 'short' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/API_PORT/);
    expect(message).toMatch(/DATABASE_URL/);
    expect(message).toMatch(/OPS_API_KEY: must be at least 16 characters/);
  });

  it('keeps tenant filestores and backups under DATA_DIR unless told otherwise', () => {
    expect(parseConfig({ DATA_DIR: '/srv/plana' })).toMatchObject({
      FILESTORE_ROOT: '/srv/plana/filestore',
      BACKUP_ROOT: '/srv/plana/backups',
    });
    expect(parseConfig({ DATA_DIR: '/srv/plana', FILESTORE_ROOT: '/mnt/files' }).FILESTORE_ROOT).toBe('/mnt/files');
  });

  it('keeps backups in the local SeaweedFS in development, and in AWS S3 (SDK credentials) in production unless told otherwise', () => {
    expect(parseConfig({})).toMatchObject({
      BACKUP_S3_ENDPOINT: 'http://127.0.0.1:8333',
      BACKUP_S3_BUCKET: 'plana-backups',
      BACKUP_S3_ACCESS_KEY_ID: 'plana-dev',
    });
    const production = parseConfig(PRODUCTION);
    expect(production.BACKUP_S3_ENDPOINT).toBeUndefined();
    expect(production.BACKUP_S3_ACCESS_KEY_ID).toBeUndefined();
    const elsewhere = parseConfig({ BACKUP_S3_ENDPOINT: 'https://s3.eu-central-1.amazonaws.com' });
    expect(elsewhere.BACKUP_S3_ENDPOINT).toBe('https://s3.eu-central-1.amazonaws.com');
    expect(elsewhere.BACKUP_S3_ACCESS_KEY_ID).toBeUndefined();
    expect(() => parseConfig({ BACKUP_S3_BUCKET: 'Not_A_Bucket' })).toThrow(
      /BACKUP_S3_BUCKET: must be an S3 bucket name/,
    );
  });

  it('keeps npm run dev on real Odoo apart from the stand-in: its own DATA_DIR (a stand-in tenant database is no Odoo database)', () => {
    expect(parseConfig({})).toMatchObject({ DATA_DIR: '.data', FILESTORE_ROOT: '.data/filestore' });
    expect(parseConfig({ ERP_BACKEND: 'odoo' })).toMatchObject({
      DATA_DIR: '.data/odoo',
      FILESTORE_ROOT: '.data/odoo/filestore',
      BACKUP_ROOT: '.data/odoo/backups',
    });
    expect(parseConfig({ ERP_BACKEND: 'odoo', DATA_DIR: '/srv/plana' }).DATA_DIR).toBe('/srv/plana');
  });
});

describe('webhook receivers on this machine', () => {
  const problems = (env: Record<string, string>, url: string) => {
    const cfg = parseConfig(env.NODE_ENV === 'production' ? { ...PRODUCTION, ...env } : env);
    return urlProblems(url, { allowHttp: cfg.WEBHOOK_ALLOW_HTTP, policy: addressPolicy(cfg) });
  };

  it('are allowed in development (npm run dev), on IPv4 and IPv6 loopback and localhost', () => {
    for (const url of ['http://127.0.0.1:4000/hook', 'http://[::1]:4000/hook', 'http://localhost:4000/hook']) {
      expect(problems({ NODE_ENV: 'development' }, url)).toEqual([]);
    }
    // other private addresses stay refused
    expect(problems({ NODE_ENV: 'development' }, 'http://10.0.0.5/hook')[0]).toMatch(/must not point at a private/);
  });

  it('are refused in production, and wherever the allow-list is set empty', () => {
    expect(problems({ NODE_ENV: 'production', WEBHOOK_ALLOW_HTTP: 'true' }, 'http://127.0.0.1:4000/hook')).toEqual([
      expect.stringMatching(/must not point at a private, loopback/),
    ]);
    expect(problems({ NODE_ENV: 'production' }, 'https://localhost/hook')).toEqual(['url must not point at localhost']);
    expect(
      problems({ NODE_ENV: 'development', WEBHOOK_ALLOWED_ADDRESSES: '' }, 'http://127.0.0.1:4000/hook')[0],
    ).toMatch(/loopback/);
  });
});

describe('production (NODE_ENV=production)', () => {
  const refusal = (env: Record<string, string>): string => {
    try {
      parseConfig(env);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as Error).message;
    }
    throw new Error('the configuration was accepted');
  };

  it('accepts real Odoo and secrets of its own', () => {
    expect(parseConfig(PRODUCTION)).toMatchObject({ NODE_ENV: 'production', ERP_BACKEND: 'odoo' });
  });

  it('refuses the ERP stand-in, which is for development and tests', () => {
    expect(refusal({ ...PRODUCTION, ERP_BACKEND: 'standin' })).toMatch(
      /^Invalid configuration for production \(NODE_ENV=production\):\n {2}ERP_BACKEND: the ERP stand-in/,
    );
  });

  it.each(DEVELOPMENT_DEFAULT_SECRETS)('refuses the development default of %s, set or left unset', (name) => {
    const defaults = parseConfig({}) as unknown as Record<string, string>;
    const unset = Object.fromEntries(Object.entries(PRODUCTION).filter(([k]) => k !== name));
    expect(refusal(unset)).toContain(`\n  ${name}: the development default is not a secret`);
    expect(refusal({ ...PRODUCTION, [name]: defaults[name]! })).toContain(`${name}: the development default`);
  });

  it.each(['DATABASE_URL', 'ERP_DATABASE_URL'])("refuses %s with the development server's password", (name) => {
    expect(refusal({ ...PRODUCTION, [name]: 'postgres://plana:plana@postgresql:5432/plana' })).toContain(
      `${name}: its password is the development default`,
    );
  });

  it('refuses the local object store secret', () => {
    expect(refusal({ ...PRODUCTION, BACKUP_S3_SECRET_ACCESS_KEY: 'plana-dev-only-backups-secret' })).toContain(
      'BACKUP_S3_SECRET_ACCESS_KEY: the development default',
    );
  });

  it('names every refusal in one error: with nothing set, the stand-in and each development secret', () => {
    const message = refusal({ NODE_ENV: 'production' });
    const named = message
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(':')[0]);
    expect(named.sort()).toEqual(
      ['ERP_BACKEND', 'DATABASE_URL', 'ERP_DATABASE_URL', ...DEVELOPMENT_DEFAULT_SECRETS].sort(),
    );
  });

  it('is not applied in development or tests', () => {
    expect(parseConfig({ NODE_ENV: 'test' }).ERP_BACKEND).toBe('standin');
    expect(parseConfig({}).ERP_BACKEND).toBe('standin');
  });
});
