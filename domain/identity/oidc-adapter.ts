/**
 * oidc-provider's storage adapter on PostgreSQL: clients from `oidc_clients` (oidc-clients.ts,
 * written by provisioning, read only here), every other model (sessions, interactions,
 * authorization codes, access tokens, grants…) in `oidc_records` with its expiry. One adapter
 * instance per model name, as the library creates them.
 */
import type pg from 'pg';
import { clientMetadata } from './oidc-clients.js';

type Payload = Record<string, unknown> & { grantId?: string; uid?: string; userCode?: string; consumed?: number };

export function pgOidcAdapter(pool: pg.Pool, secretsKey: string) {
  return class PgOidcAdapter {
    constructor(private readonly model: string) {}

    async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
      if (this.model === 'Client') throw new Error('clients are created by provisioning, not by the provider');
      await pool.query(
        `INSERT INTO oidc_records (model, id, payload, grant_id, uid, user_code, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7::int IS NULL THEN NULL ELSE now() + make_interval(secs => $7::int) END)
         ON CONFLICT (model, id) DO UPDATE SET payload = EXCLUDED.payload, grant_id = EXCLUDED.grant_id,
           uid = EXCLUDED.uid, user_code = EXCLUDED.user_code, expires_at = EXCLUDED.expires_at`,
        [
          this.model,
          id,
          payload,
          payload.grantId ?? null,
          payload.uid ?? null,
          payload.userCode ?? null,
          expiresIn ?? null,
        ],
      );
    }

    async find(id: string): Promise<Payload | undefined> {
      if (this.model === 'Client') return clientMetadata(pool, secretsKey, id);
      return this.findBy('id', id);
    }

    findByUid(uid: string) {
      return this.findBy('uid', uid);
    }

    findByUserCode(userCode: string) {
      return this.findBy('user_code', userCode);
    }

    private async findBy(column: 'id' | 'uid' | 'user_code', value: string): Promise<Payload | undefined> {
      const { rows } = await pool.query<{ payload: Payload; consumed_at: Date | null }>(
        `SELECT payload, consumed_at FROM oidc_records
          WHERE model = $1 AND ${column} = $2 AND (expires_at IS NULL OR expires_at > now())`,
        [this.model, value],
      );
      const row = rows[0];
      if (!row) return undefined;
      return row.consumed_at ? { ...row.payload, consumed: Math.floor(row.consumed_at.getTime() / 1000) } : row.payload;
    }

    async consume(id: string): Promise<void> {
      await pool.query('UPDATE oidc_records SET consumed_at = now() WHERE model = $1 AND id = $2', [this.model, id]);
    }

    async destroy(id: string): Promise<void> {
      await pool.query('DELETE FROM oidc_records WHERE model = $1 AND id = $2', [this.model, id]);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await pool.query('DELETE FROM oidc_records WHERE grant_id = $1', [grantId]);
    }
  };
}

/** Deletes expired records (the provider never reads them again). */
export async function deleteExpiredOidcRecords(pool: pg.Pool): Promise<number> {
  const { rowCount } = await pool.query('DELETE FROM oidc_records WHERE expires_at < now()');
  return rowCount ?? 0;
}
