/**
 * A forgotten password: a single-use, short-lived link (PASSWORD_RESET_TTL) mailed to the account's
 * address, `{API_PUBLIC_URL}/account/reset-password#token=…`, by which the person chooses a new
 * password. A new link replaces the open one; a reset ends every session of the person (the one
 * it starts is new). The request answers the same whether or not the address has an account
 * (api/routes/auth/password.ts): no answer says which addresses have accounts.
 */
import bcrypt from 'bcrypt';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { endOtherSessions } from '../access/login-sessions.js';
import type { NotificationsMailClient } from '../notifications/mail-client.js';
import { passwordResetEmail } from './emails.js';
import { hashLinkToken, newLinkToken } from './link-tokens.js';
import { checkNewPassword } from './passwords.js';

export interface PasswordResetDeps {
  mail: NotificationsMailClient;
  /** API_PUBLIC_URL */
  publicUrl: string;
  /** How long a reset link works (ms): PASSWORD_RESET_TTL. */
  ttlMs: number;
}

export const passwordResetLink = (publicUrl: string, token: string) =>
  `${publicUrl.replace(/\/$/, '')}/account/reset-password#token=${token}`;

/**
 * Mails a reset link to the account of `email` (any case), in `db`'s transaction: when the mail
 * cannot be sent, nothing is kept. Returns false, sending nothing, when no account has the address.
 */
export async function mailPasswordReset(deps: PasswordResetDeps, db: pg.PoolClient, email: string): Promise<boolean> {
  const found = await db.query<{ id: string; email: string; name: string }>(
    'SELECT id, email, name FROM users WHERE lower(email) = lower($1) FOR UPDATE',
    [email.trim()],
  );
  const user = found.rows[0];
  if (!user) return false;
  await db.query(
    'UPDATE password_resets SET replaced_at = now() WHERE user_id = $1 AND used_at IS NULL AND replaced_at IS NULL',
    [user.id],
  );
  const token = newLinkToken();
  const { rows } = await db.query<{ id: string; expires_at: Date }>(
    `INSERT INTO password_resets (user_id, token_hash, expires_at)
     VALUES ($1, $2, now() + $3 * interval '1 millisecond') RETURNING id, expires_at`,
    [user.id, hashLinkToken(token), deps.ttlMs],
  );
  const reset = rows[0]!;
  await deps.mail.send(
    passwordResetEmail({
      to: user.email,
      name: user.name,
      link: passwordResetLink(deps.publicUrl, token),
      expiresAt: reset.expires_at,
    }),
    `password-reset:${reset.id}`,
  );
  return true;
}

/** `mailPasswordReset` in a transaction of its own. */
export const requestPasswordReset = (deps: PasswordResetDeps & { pool: pg.Pool }, email: string) =>
  withTransaction(deps.pool, (db) => mailPasswordReset(deps, db, email));

export interface ResetDone {
  user: { id: string; email: string; name: string };
  /** How many sessions of the person the reset ended. */
  sessionsEnded: number;
}

/**
 * Sets the password of the link's account and ends all its sessions. 400 for a password outside
 * the rule, 404 for a token that is not a reset link's, 409 once used, 410 when replaced by a newer
 * link or expired. Concurrent uses of one token queue on its row: exactly one succeeds.
 */
export async function resetPassword(
  pool: pg.Pool,
  bcryptCost: number,
  input: { token: string; password: string },
): Promise<ResetDone> {
  checkNewPassword(input.password, 'body.password');
  return withTransaction(pool, async (db) => {
    const { rows } = await db.query<{
      id: string;
      user_id: string;
      used: boolean;
      replaced: boolean;
      expired: boolean;
    }>(
      `SELECT id, user_id, used_at IS NOT NULL AS used, replaced_at IS NOT NULL AS replaced, expires_at <= now() AS expired
         FROM password_resets WHERE token_hash = $1 FOR UPDATE`,
      [hashLinkToken(input.token)],
    );
    const reset = rows[0];
    if (!reset)
      throw new AppError('NOT_FOUND', 'This password link is not valid: open the whole link from the e-mail.');
    if (reset.used)
      throw new AppError('CONFLICT', 'This password link was used already: sign in, or ask for a new link.');
    if (reset.replaced)
      throw new AppError(
        'GONE',
        'This password link was replaced by a newer one: use the latest e-mail, or ask for a new link.',
      );
    if (reset.expired) throw new AppError('GONE', 'This password link has expired: ask for a new one.');
    // hashed only for a link that works: a made-up token costs no bcrypt
    const hash = await bcrypt.hash(input.password, bcryptCost);
    await db.query('UPDATE password_resets SET used_at = now() WHERE id = $1', [reset.id]);
    const user = (
      await db.query<ResetDone['user']>('UPDATE users SET password_hash = $2 WHERE id = $1 RETURNING id, email, name', [
        reset.user_id,
        hash,
      ])
    ).rows[0]!;
    const sessionsEnded = await endOtherSessions(db, user.id, null);
    return { user, sessionsEnded };
  });
}
