import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../lib/config.js';

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
});
