/**
 * Interactive login sessions (specification §5.6): a short-lived access token (a JWT signed with
 * HS256 by `jose`) and a rotating refresh token. Refresh tokens are 32 random bytes; PostgreSQL
 * keeps only their SHA-256. Every refresh rotates the token within its family; presenting a token
 * that was already rotated (a stolen copy being replayed, or the victim after the thief) revokes
 * the whole family, so both parties have to log in again.
 *
 * A session is a refresh-token family. Each access token names its session (`sid`, the family
 * id) and is accepted only while that family is not revoked: logging out (or a detected reuse)
 * ends the access tokens of the session at once, not when they expire.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import bcrypt from 'bcrypt';
import { SignJWT, jwtVerify } from 'jose';
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';

const ISSUER = 'plana-account-api';
const AUDIENCE = 'plana-portal';

export interface SessionUser {
  id: string;
  email: string;
  name: string;
}

export interface IssuedSession {
  accessToken: string;
  expiresIn: number;
  refreshToken: string;
  refreshExpiresIn: number;
  user: SessionUser;
}

type SessionConfig = Pick<Config, 'AUTH_JWT_SECRET' | 'ACCESS_TOKEN_TTL_SECONDS' | 'REFRESH_TOKEN_TTL_SECONDS'>;

const secretKey = (cfg: SessionConfig) => new TextEncoder().encode(cfg.AUTH_JWT_SECRET);
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** Compared when the e-mail is unknown, so a wrong e-mail costs as long as a wrong password. */
const DUMMY_HASH = bcrypt.hashSync('not-a-password', 10);

export const INVALID_LOGIN = 'The e-mail address or password is not correct.';
export const INVALID_SESSION = 'The session is not valid or has expired; log in again.';

export async function signAccessToken(cfg: SessionConfig, userId: string, sessionId: string): Promise<string> {
  return new SignJWT({ typ: 'access', sid: sessionId })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(userId)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setJti(randomUUID())
    .setExpirationTime(`${cfg.ACCESS_TOKEN_TTL_SECONDS}s`)
    .sign(secretKey(cfg));
}

const INVALID_ACCESS_TOKEN = 'The access token is not valid or has expired.';

/** The user and session of a well-signed, unexpired access token; 401 for anything else (expired, forged, malformed). */
export async function decodeAccessToken(
  cfg: SessionConfig,
  token: string,
): Promise<{ userId: string; sessionId: string }> {
  try {
    const { payload } = await jwtVerify(token, secretKey(cfg), {
      issuer: ISSUER,
      audience: AUDIENCE,
      algorithms: ['HS256'],
    });
    if (payload.typ !== 'access' || typeof payload.sub !== 'string' || typeof payload.sid !== 'string')
      throw new Error('not an access token');
    return { userId: payload.sub, sessionId: payload.sid };
  } catch {
    throw new AppError('UNAUTHORIZED', INVALID_ACCESS_TOKEN);
  }
}

/** The user id of a valid access token whose session is still open (not logged out); 401 otherwise. */
export async function verifyAccessToken(pool: pg.Pool, cfg: SessionConfig, token: string): Promise<string> {
  return (await verifyAccessSession(pool, cfg, token)).userId;
}

/** The user and session of a valid access token whose session is still open; 401 otherwise. */
export async function verifyAccessSession(
  pool: pg.Pool,
  cfg: SessionConfig,
  token: string,
): Promise<{ userId: string; sessionId: string }> {
  const { userId, sessionId } = await decodeAccessToken(cfg, token);
  const { rowCount } = await pool.query(
    'SELECT 1 FROM refresh_tokens WHERE family_id = $1 AND user_id = $2 AND revoked_at IS NULL LIMIT 1',
    [sessionId, userId],
  );
  if (!rowCount) throw new AppError('UNAUTHORIZED', INVALID_ACCESS_TOKEN);
  return { userId, sessionId };
}

/**
 * Ends every session of a user but `keepSessionId` (a password change): their refresh tokens are
 * revoked, and with them the access tokens of those sessions. Returns how many sessions ended.
 */
export async function endOtherSessions(
  db: Pick<pg.Pool, 'query'>,
  userId: string,
  keepSessionId: string | null,
): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `WITH ended AS (
       UPDATE refresh_tokens SET revoked_at = now()
        WHERE user_id = $1 AND revoked_at IS NULL AND ($2::uuid IS NULL OR family_id <> $2::uuid)
        RETURNING family_id)
     SELECT count(DISTINCT family_id)::int AS n FROM ended`,
    [userId, keepSessionId],
  );
  return rows[0]?.n ?? 0;
}

async function insertRefreshToken(db: pg.PoolClient | pg.Pool, cfg: SessionConfig, userId: string, familyId: string) {
  const refreshToken = randomBytes(32).toString('base64url');
  await db.query(
    `INSERT INTO refresh_tokens (family_id, user_id, token_hash, expires_at)
     VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
    [familyId, userId, sha256(refreshToken), cfg.REFRESH_TOKEN_TTL_SECONDS],
  );
  return refreshToken;
}

/** Starts a new session (a new refresh-token family) for a user already authenticated. */
export async function startSession(pool: pg.Pool, cfg: SessionConfig, user: SessionUser): Promise<IssuedSession> {
  const familyId = randomUUID();
  const refreshToken = await insertRefreshToken(pool, cfg, user.id, familyId);
  return {
    accessToken: await signAccessToken(cfg, user.id, familyId),
    expiresIn: cfg.ACCESS_TOKEN_TTL_SECONDS,
    refreshToken,
    refreshExpiresIn: cfg.REFRESH_TOKEN_TTL_SECONDS,
    user,
  };
}

/** E-mail + password login. Wrong e-mail and wrong password get the same 401. */
export async function loginWithPassword(
  pool: pg.Pool,
  cfg: SessionConfig,
  email: string,
  password: string,
): Promise<IssuedSession> {
  const { rows } = await pool.query<SessionUser & { password_hash: string | null }>(
    'SELECT id, email, name, password_hash FROM users WHERE lower(email) = lower($1)',
    [email],
  );
  const row = rows[0];
  const ok = await bcrypt.compare(password, row?.password_hash ?? DUMMY_HASH);
  if (!row || !row.password_hash || !ok) throw new AppError('UNAUTHORIZED', INVALID_LOGIN);
  return startSession(pool, cfg, { id: row.id, email: row.email, name: row.name });
}

/**
 * Exchanges a refresh token for a new one (same family) and a new access token. A token already
 * rotated revokes its family; the revocation is committed even though the caller gets 401.
 */
export async function refreshSession(pool: pg.Pool, cfg: SessionConfig, refreshToken: string): Promise<IssuedSession> {
  const outcome = await withTransaction(pool, async (db) => {
    const { rows } = await db.query<{
      id: string;
      family_id: string;
      user_id: string;
      rotated_at: Date | null;
      revoked_at: Date | null;
      expired: boolean;
    }>(
      `SELECT id, family_id, user_id, rotated_at, revoked_at, expires_at <= now() AS expired
         FROM refresh_tokens WHERE token_hash = $1 FOR UPDATE`,
      [sha256(refreshToken)],
    );
    const row = rows[0];
    if (!row || row.revoked_at || row.expired) return { ok: false as const };
    if (row.rotated_at) {
      await db.query('UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = $1 AND revoked_at IS NULL', [
        row.family_id,
      ]);
      return { ok: false as const, reused: true };
    }
    await db.query('UPDATE refresh_tokens SET rotated_at = now() WHERE id = $1', [row.id]);
    const next = await insertRefreshToken(db, cfg, row.user_id, row.family_id);
    const user = await db.query<SessionUser>('SELECT id, email, name FROM users WHERE id = $1', [row.user_id]);
    return { ok: true as const, refreshToken: next, familyId: row.family_id, user: user.rows[0]! };
  });
  if (!outcome.ok) throw new AppError('UNAUTHORIZED', INVALID_SESSION);
  return {
    accessToken: await signAccessToken(cfg, outcome.user.id, outcome.familyId),
    expiresIn: cfg.ACCESS_TOKEN_TTL_SECONDS,
    refreshToken: outcome.refreshToken,
    refreshExpiresIn: cfg.REFRESH_TOKEN_TTL_SECONDS,
    user: outcome.user,
  };
}

/** Logout with an access token: revokes its session (the refresh-token family it names). */
export async function endSessionById(pool: pg.Pool, sessionId: string): Promise<void> {
  await pool.query('UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = $1 AND revoked_at IS NULL', [
    sessionId,
  ]);
}

/** Logout: revokes the family of the given refresh token (unknown tokens are ignored), and with it its access tokens. */
export async function endSession(pool: pg.Pool, refreshToken: string): Promise<void> {
  await pool.query(
    `UPDATE refresh_tokens SET revoked_at = now()
      WHERE revoked_at IS NULL
        AND family_id = (SELECT family_id FROM refresh_tokens WHERE token_hash = $1)`,
    [sha256(refreshToken)],
  );
}

export interface Membership {
  id: string;
  slug: string;
  name: string;
  role: 'admin' | 'member';
}

export async function userWithMemberships(
  pool: pg.Pool,
  userId: string,
): Promise<{ user: SessionUser; workspaces: Membership[] }> {
  const user = await pool.query<SessionUser>('SELECT id, email, name FROM users WHERE id = $1', [userId]);
  if (!user.rows[0]) throw new AppError('UNAUTHORIZED', 'The access token is not valid or has expired.');
  const { rows } = await pool.query<Membership>(
    `SELECT w.id, w.slug, w.name, m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
      WHERE m.user_id = $1 ORDER BY w.slug`,
    [userId],
  );
  return { user: user.rows[0], workspaces: rows };
}
