/**
 * The owner's activation link: the welcome e-mail (services/notifications) carries a single-use
 * link, `{API_PUBLIC_URL}/w/<slug>/activate#token=…`, by which the owner of a new workspace, whose
 * account provisioning made without a password, chooses one and lands signed in on the workspace.
 * It is an invitation of purpose 'activation' (invitations.ts): the same token, acceptance
 * (invitation-acceptance.ts) and page as a team invitation. A new link (a resend of the welcome
 * e-mail, or a renewal from the page of a dead link) replaces the open one, whose token dies.
 */
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import type { NotificationsMailClient } from '../notifications/mail-client.js';
import { activationEmail } from './emails.js';
import { hashLinkToken, newLinkToken } from './link-tokens.js';
import { mailPasswordReset, type PasswordResetDeps } from './password-resets.js';

export interface ActivationLink {
  /** The invitation that carries it. */
  id: string;
  link: string;
  expiresAt: Date;
}

export interface ActivationDeps {
  /** API_PUBLIC_URL */
  publicUrl: string;
  /** How long an activation link works (ms): ACTIVATION_LINK_TTL. */
  ttlMs: number;
}

export const activationLink = (publicUrl: string, slug: string, token: string) =>
  `${publicUrl.replace(/\/$/, '')}/w/${slug}/activate#token=${token}`;

/**
 * A new activation link for `email`, a member of the workspace `slug` without a password yet; the
 * open one (if any) is revoked. Undefined when there is nothing to activate: the account has a
 * password (the owner signs in with it), or the address is not a member of that workspace.
 */
export async function issueActivationLink(
  db: pg.PoolClient,
  deps: ActivationDeps,
  input: { email: string; workspace: string },
): Promise<ActivationLink | undefined> {
  const { rows } = await db.query<{ workspace_id: string; email: string; role: string }>(
    `SELECT m.workspace_id, u.email, m.role
       FROM users u JOIN memberships m ON m.user_id = u.id JOIN workspaces w ON w.id = m.workspace_id
      WHERE lower(u.email) = lower($1) AND w.slug = $2 AND u.password_hash IS NULL
      FOR UPDATE OF u`,
    [input.email, input.workspace],
  );
  const owner = rows[0];
  if (!owner) return undefined;
  await db.query(
    `UPDATE workspace_invitations SET revoked_at = now()
      WHERE workspace_id = $1 AND lower(email) = lower($2) AND accepted_at IS NULL AND revoked_at IS NULL`,
    [owner.workspace_id, owner.email],
  );
  const token = newLinkToken();
  const inserted = await db.query<{ id: string; expires_at: Date }>(
    `INSERT INTO workspace_invitations (workspace_id, email, role, token_hash, expires_at, purpose)
     VALUES ($1, $2, $3, $4, now() + $5 * interval '1 millisecond', 'activation') RETURNING id, expires_at`,
    [owner.workspace_id, owner.email, owner.role, hashLinkToken(token), deps.ttlMs],
  );
  const row = inserted.rows[0]!;
  return { id: row.id, link: activationLink(deps.publicUrl, input.workspace, token), expiresAt: row.expires_at };
}

export interface RenewalDeps {
  pool: pg.Pool;
  mail: NotificationsMailClient;
  activation: ActivationDeps;
  passwordReset: Omit<PasswordResetDeps, 'pool' | 'mail'>;
}

/**
 * "Send me a new link" from the page of a dead link (used, expired or replaced), by its token: an
 * owner's activation link not used yet gets a new activation link; a used link (the account has
 * its password now) gets a password-reset link. The e-mail goes to the link's own address only.
 * 404 for a token that was never a link; 409 for a link that still works; 410 for a team
 * invitation that expired or was revoked (only an admin can invite again).
 */
export async function renewLink(deps: RenewalDeps, token: string): Promise<void> {
  await withTransaction(deps.pool, async (db) => {
    const { rows } = await db.query<{
      id: string;
      purpose: 'team' | 'activation';
      email: string;
      slug: string;
      workspace_name: string;
      accepted_by: string | null;
      accepted: boolean;
      open: boolean;
    }>(
      `SELECT i.id, i.purpose, i.email, w.slug, w.name AS workspace_name, i.accepted_by,
              i.accepted_at IS NOT NULL AS accepted,
              i.accepted_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > now() AS open
         FROM workspace_invitations i JOIN workspaces w ON w.id = i.workspace_id
        WHERE i.token_hash = $1 FOR UPDATE OF i`,
      [hashLinkToken(token)],
    );
    const link = rows[0];
    if (!link)
      throw new AppError(
        'NOT_FOUND',
        'This link is not valid: open the whole link from the e-mail, or ask for a new password link on the sign-in page.',
      );
    if (link.open) throw new AppError('CONFLICT', 'This link still works: use it to choose your password.');
    if (link.accepted) {
      const account = (await db.query<{ email: string }>('SELECT email FROM users WHERE id = $1', [link.accepted_by]))
        .rows[0];
      await mailPasswordReset({ ...deps.passwordReset, mail: deps.mail }, db, account?.email ?? link.email);
      return;
    }
    if (link.purpose === 'team')
      throw new AppError(
        'GONE',
        'This invitation expired or was revoked; ask an admin of the workspace to invite you again.',
      );
    const renewed = await issueActivationLink(db, deps.activation, { email: link.email, workspace: link.slug });
    if (!renewed) {
      // the account got a password meanwhile (a password reset): a reset link is what helps now
      await mailPasswordReset({ ...deps.passwordReset, mail: deps.mail }, db, link.email);
      return;
    }
    await deps.mail.send(
      activationEmail({
        to: link.email,
        workspaceName: link.workspace_name,
        link: renewed.link,
        expiresAt: renewed.expiresAt,
      }),
      `activation:${renewed.id}`,
    );
  });
}
