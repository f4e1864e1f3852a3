/** Numbered SQL migrations on a real PostgreSQL database of their own. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import pg from 'pg';
import { createPool, type Pool } from '../../lib/db.js';
import { migrate } from '../../lib/migrate.js';
import { tempDir } from '../support/env.js';

const dbName = `migrate_test_${process.pid}`;
let pool: Pool;

beforeAll(async () => {
  const admin = new pg.Client({ connectionString: inject('databaseUrl') });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${dbName}"`);
  await admin.end();
  const url = new URL(inject('databaseUrl'));
  url.pathname = `/${dbName}`;
  pool = createPool(url.toString(), 3);
});

afterAll(async () => {
  await pool?.end();
  const admin = new pg.Client({ connectionString: inject('databaseUrl') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await admin.end();
});

describe('migrate', () => {
  it('applies every migration once, in order, and records it', async () => {
    const applied = await migrate(pool);
    expect(applied[0]).toBe('001_workspaces_tenants_users.sql');
    expect([...applied].sort()).toEqual(applied);
    const { rows } = await pool.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
    expect(rows.map((r) => r.name)).toEqual(applied);
    expect(await migrate(pool)).toEqual([]);
  });

  it('two processes migrating at once apply each migration once', async () => {
    const dir = tempDir('migrations');
    writeFileSync(path.join(dir, '001_counter.sql'), 'CREATE TABLE counter (n int); INSERT INTO counter VALUES (1);');
    const separate = createPool(pool.options.connectionString!, 2);
    await separate.query('DROP TABLE IF EXISTS counter; DROP TABLE IF EXISTS schema_migrations');
    try {
      const [a, b] = await Promise.all([migrate(separate, dir), migrate(pool, dir)]);
      expect([...a, ...b]).toEqual(['001_counter.sql']);
      expect((await pool.query('SELECT count(*)::int AS n FROM counter')).rows[0].n).toBe(1);
    } finally {
      await pool.query('DROP TABLE IF EXISTS counter; DROP TABLE IF EXISTS schema_migrations');
      await separate.end();
    }
  });

  it('a failing migration leaves nothing half-written', async () => {
    const dir = mkdtempSync(path.join(inject('dataDir'), 'bad-migrations-'));
    writeFileSync(path.join(dir, '001_good.sql'), 'CREATE TABLE good_one (id int);');
    writeFileSync(
      path.join(dir, '002_bad.sql'),
      'CREATE TABLE half_written (id int); SELECT no_such_column FROM good_one;',
    );
    try {
      await expect(migrate(pool, dir)).rejects.toThrow(/no_such_column/);
      const tables = await pool.query<{ t: string | null }>(`SELECT to_regclass('half_written')::text AS t`);
      expect(tables.rows[0]!.t).toBeNull();
      const recorded = await pool.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
      expect(recorded.rows.map((r) => r.name)).toEqual(['001_good.sql']);
    } finally {
      await pool.query('DROP TABLE IF EXISTS good_one; DROP TABLE IF EXISTS schema_migrations');
    }
  });
});
