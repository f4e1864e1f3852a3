/**
 * A person's profile (specification §4.1 `GET/PUT /api/portal/profile`): the name changes at once;
 * a new e-mail address takes effect only when confirmed through a single-use, expiring link mailed
 * to that address (the old address is told of the request). A request for an address another
 * account uses looks the same to the requester (same answer, same pending state), so it tells no
 * one which addresses have accounts; that address gets a notice of the attempt instead of a link,
 * and the change never happens. A new password needs the current one
 * and ends every other session of the person (their refresh tokens, and with them their access
 * tokens). E-mail and password changes both need the current password: a stolen access token alone
 * cannot take the account over.
 */
import bcrypt from 'bcrypt';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { endOtherSessions } from '../access/login-sessions.js';
import type { NotificationsMailClient } from '../notifications/mail-client.js';
import { emailChangeEmail, emailChangeNotice, emailTakenNotice } from './emails.js';
import { hashLinkToken, newLinkToken } from './link-tokens.js';
import { checkNewPassword } from './passwords.js';

export interface Profile {
  id: string;
  email: string;
  name: string;
  hasPassword: boolean;
  pendingEmail: { email: string; expiresAt: Date } | null;
  workspaces: { id: string; slug: string; name: string; role: 'admin' | 'member' }[];
}

export interface ProfileDeps {
  pool: pg.Pool;
  mail: NotificationsMailClient;
  publicUrl: string;
  /** How long an e-mail confirmation link works (ms). */
  emailChangeTtlMs: number;
  bcryptCost: number;
}

export const emailConfirmLink = (publicUrl: string, token: string) =>
  `${publicUrl.replace(/\/$/, '')}/account/confirm-email#token=${token}`;

export async function getProfile(db: pg.Pool | pg.PoolClient, userId: string): Promise<Profile> {
  const { rows } = await db.query<Profile>(
    `SELECT u.id, u.email, u.name, u.password_hash IS NOT NULL AS "hasPassword",
            (SELECT json_build_object('email', c.new_email, 'expiresAt', c.expires_at) FROM email_changes c
              WHERE c.user_id = u.id AND c.confirmed_at IS NULL AND c.cancelled_at IS NULL AND c.expires_at > now()
              ORDER BY c.created_at DESC LIMIT 1) AS "pendingEmail",
            coalesce((SELECT json_agg(json_build_object('id', w.id, 'slug', w.slug, 'name', w.name, 'role', m.role) ORDER BY w.slug)
                        FROM memberships m JOIN workspaces w ON w.id = m.workspace_id WHERE m.user_id = u.id), '[]') AS workspaces
       FROM users u WHERE u.id = $1`,
    [userId],
  );
  const profile = rows[0];
  if (!profile) throw new AppError('UNAUTHORIZED', 'The access token is not valid or has expired.');
  if (profile.pendingEmail) profile.pendingEmail.expiresAt = new Date(profile.pendingEmail.expiresAt);
  return profile;
}

export interface ProfileChange {
  name?: string;
  email?: string;
  currentPassword?: string;
  newPassword?: string;
}

/** What a change did, besides the profile it returns. */
export interface ProfileChanged {
  profile: Profile;
  /** An e-mail change was requested: a mail went to the new address (a link, or a notice when that address is taken). */
  emailConfirmationSent: boolean;
  passwordChanged: boolean;
  otherSessionsEnded: number;
}

/**
 * Checks the current password (when the change needs it) before anything is written; the caller
 * wraps this in the password throttle. Throws 403 for a wrong one, 400 when it is missing.
 */
export async function checkCurrentPassword(pool: pg.Pool, userId: string, change: ProfileChange): Promise<void> {
  if (change.email === undefined && change.newPassword === undefined) return;
  if (!change.currentPassword) {
    throw new AppError(
      'BAD_REQUEST',
      'Changing the e-mail address or the password needs your current password (currentPassword).',
      {
        errors: [{ field: 'body.currentPassword', message: 'required with email or newPassword' }],
      },
    );
  }
  const { rows } = await pool.query<{ password_hash: string | null }>('SELECT password_hash FROM users WHERE id = $1', [
    userId,
  ]);
  const hash = rows[0]?.password_hash;
  if (!hash)
    throw new AppError(
      'CONFLICT',
      'Your account has no password (you sign in through your organisation), so its e-mail and password are managed there.',
    );
  if (!(await bcrypt.compare(change.currentPassword, hash)))
    throw new AppError('FORBIDDEN', 'The current password is not correct.');
}

/**
 * Applies a profile change in one transaction, e-mails included: when the confirmation cannot be
 * mailed, nothing changes. Call checkCurrentPassword first.
 */
export async function changeProfile(
  deps: ProfileDeps,
  user: { id: string; sessionId: string },
  change: ProfileChange,
): Promise<ProfileChanged> {
  if (change.newPassword !== undefined) checkNewPassword(change.newPassword, 'body.newPassword');
  const newPasswordHash =
    change.newPassword !== undefined ? await bcrypt.hash(change.newPassword, deps.bcryptCost) : undefined;
  return withTransaction(deps.pool, async (db) => {
    const current = (
      await db.query<{ email: string; name: string }>('SELECT email, name FROM users WHERE id = $1 FOR UPDATE', [
        user.id,
      ])
    ).rows[0];
    if (!current) throw new AppError('UNAUTHORIZED', 'The access token is not valid or has expired.');
    if (change.name !== undefined)
      await db.query('UPDATE users SET name = $2 WHERE id = $1', [user.id, change.name.trim()]);

    let otherSessionsEnded = 0;
    if (newPasswordHash) {
      await db.query('UPDATE users SET password_hash = $2 WHERE id = $1', [user.id, newPasswordHash]);
      otherSessionsEnded = await endOtherSessions(db, user.id, user.sessionId);
    }

    let emailConfirmationSent = false;
    if (change.email !== undefined) {
      const email = change.email.trim();
      if (email.toLowerCase() === current.email.toLowerCase()) {
        throw new AppError('BAD_REQUEST', 'This is already your e-mail address.', {
          errors: [{ field: 'body.email', message: 'the current address' }],
        });
      }
      // the account that uses the address already, if any: its own (confirmed) spelling of it is where the notice goes
      const owner = (
        await db.query<{ email: string }>('SELECT email FROM users WHERE lower(email) = lower($1)', [email])
      ).rows[0];
      // a new request replaces an earlier one: its link dies
      await db.query(
        'UPDATE email_changes SET cancelled_at = now() WHERE user_id = $1 AND confirmed_at IS NULL AND cancelled_at IS NULL',
        [user.id],
      );
      const token = newLinkToken();
      const { rows } = await db.query<{ id: string; expires_at: Date }>(
        `INSERT INTO email_changes (user_id, new_email, token_hash, expires_at)
         VALUES ($1, $2, $3, now() + $4 * interval '1 millisecond') RETURNING id, expires_at`,
        [user.id, email, hashLinkToken(token), deps.emailChangeTtlMs],
      );
      const { id, expires_at: expiresAt } = rows[0]!;
      const name = change.name?.trim() ?? current.name;
      // a taken address: the same pending change for the requester, but its token is never mailed (nor stored anywhere else)
      const toNewAddress = owner
        ? emailTakenNotice({ to: owner.email })
        : emailChangeEmail({ to: email, name, link: emailConfirmLink(deps.publicUrl, token), expiresAt });
      await deps.mail.send(toNewAddress, `email-change:${id}`);
      await deps.mail.send(
        emailChangeNotice({ to: current.email, name, newEmail: email }),
        `email-change-notice:${id}`,
      );
      emailConfirmationSent = true;
    }
    return {
      profile: await getProfile(db, user.id),
      emailConfirmationSent,
      passwordChanged: newPasswordHash !== undefined,
      otherSessionsEnded,
    };
  });
}

/**
 * Confirms an e-mail change by the token of its link: the address changes now. 404 for an unknown
 * token (or one replaced by a newer request), 409 once used or when the address was taken meanwhile,
 * 410 when expired.
 */
export async function confirmEmailChange(pool: pg.Pool, token: string): Promise<{ userId: string; email: string }> {
  return withTransaction(pool, async (db) => {
    const { rows } = await db.query<{
      id: string;
      user_id: string;
      new_email: string;
      confirmed_at: Date | null;
      cancelled_at: Date | null;
      expired: boolean;
    }>(
      `SELECT id, user_id, new_email, confirmed_at, cancelled_at, expires_at <= now() AS expired FROM email_changes WHERE token_hash = $1 FOR UPDATE`,
      [hashLinkToken(token)],
    );
    const change = rows[0];
    if (!change || change.cancelled_at)
      throw new AppError(
        'NOT_FOUND',
        'This confirmation link is not valid: it may have been replaced by a newer request. Use the link of the latest e-mail.',
      );
    if (change.confirmed_at) throw new AppError('CONFLICT', 'This e-mail address was confirmed already.');
    if (change.expired)
      throw new AppError('GONE', 'This confirmation link has expired; request the change again from your profile.');
    const taken = await db.query('SELECT 1 FROM users WHERE lower(email) = lower($1) AND id <> $2', [
      change.new_email,
      change.user_id,
    ]);
    if (taken.rowCount) throw new AppError('CONFLICT', 'Another account uses this e-mail address now.');
    await db.query('UPDATE users SET email = $2 WHERE id = $1', [change.user_id, change.new_email]);
    await db.query('UPDATE email_changes SET confirmed_at = now() WHERE id = $1', [change.id]);
    return { userId: change.user_id, email: change.new_email };
  });
}
