/**
 * Accepting a team invitation (invitations.ts) by its link's token: the invited address's account
 * (made now, or proved by its password) joins the workspace with the invited role, once.
 */
import bcrypt from 'bcrypt';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import type { Role } from './invitations.js';
import { hashLinkToken } from './link-tokens.js';
import { checkNewPassword } from './passwords.js';

export interface AcceptedInvitation {
  user: { id: string; email: string; name: string };
  workspace: { id: string; slug: string; name: string };
  role: Role;
  accountCreated: boolean;
}

type User = AcceptedInvitation['user'];

/** An invitation still open for acceptance. */
interface OpenInvitation {
  id: string;
  workspace_id: string;
  email: string;
  role: Role;
}

/**
 * Accepts an invitation by its token. A new address: `name` and `password` create the account. An
 * address with an account: `password` must be that account's (401 otherwise; its name and password
 * stay as they are). 404 for a token that is not (or no longer, after a re-invite) an invitation's,
 * 409 once accepted, 410 when revoked or expired. Concurrent accepts of one token queue on its row:
 * exactly one succeeds.
 */
export async function acceptInvitation(
  pool: pg.Pool,
  bcryptCost: number,
  input: { token: string; name?: string; password: string },
): Promise<AcceptedInvitation> {
  return withTransaction(pool, async (db) => {
    const inv = await lockOpenInvitation(db, input.token);
    const { user, accountCreated } = await invitedUser(db, bcryptCost, inv, input);
    const role = await joinWorkspace(db, inv, user);
    await db.query('UPDATE workspace_invitations SET accepted_at = now(), accepted_by = $2 WHERE id = $1', [
      inv.id,
      user.id,
    ]);
    const workspace = (
      await db.query<{ id: string; slug: string; name: string }>(
        'SELECT id, slug, name FROM workspaces WHERE id = $1',
        [inv.workspace_id],
      )
    ).rows[0]!;
    return { user, workspace, role, accountCreated };
  });
}

/** The token's invitation, locked for this transaction; 404, 409 or 410 when it cannot be accepted. */
async function lockOpenInvitation(db: pg.PoolClient, token: string): Promise<OpenInvitation> {
  const found = await db.query<
    OpenInvitation & { accepted_at: Date | null; revoked_at: Date | null; expired: boolean }
  >(
    `SELECT id, workspace_id, email, role, accepted_at, revoked_at, expires_at <= now() AS expired
       FROM workspace_invitations WHERE token_hash = $1 FOR UPDATE`,
    [hashLinkToken(token)],
  );
  const inv = found.rows[0];
  if (!inv)
    throw new AppError(
      'NOT_FOUND',
      'This invitation link is not valid: it may have been replaced by a newer invitation. Use the link of the latest invitation e-mail.',
    );
  if (inv.accepted_at) throw new AppError('CONFLICT', 'This invitation was accepted already; log in instead.');
  if (inv.revoked_at)
    throw new AppError('GONE', 'This invitation was revoked; ask an admin of the workspace for a new one.');
  if (inv.expired)
    throw new AppError('GONE', 'This invitation has expired; ask an admin of the workspace to invite you again.');
  return inv;
}

/** The invited address's account: proved by its password (401 otherwise), or made with `name` and `password`. */
async function invitedUser(
  db: pg.PoolClient,
  bcryptCost: number,
  inv: OpenInvitation,
  input: { name?: string; password: string },
): Promise<{ user: User; accountCreated: boolean }> {
  const existing = await db.query<User & { password_hash: string | null }>(
    'SELECT id, email, name, password_hash FROM users WHERE lower(email) = lower($1)',
    [inv.email],
  );
  const account = existing.rows[0];
  if (account) {
    const ok = account.password_hash ? await bcrypt.compare(input.password, account.password_hash) : false;
    if (!ok)
      throw new AppError(
        'UNAUTHORIZED',
        `${inv.email} already has an account: give its password to accept the invitation.`,
      );
    return { user: { id: account.id, email: account.email, name: account.name }, accountCreated: false };
  }
  const name = input.name?.trim();
  if (!name)
    throw new AppError('BAD_REQUEST', 'Give your name to create your account.', {
      errors: [{ field: 'body.name', message: 'required for a new account' }],
    });
  checkNewPassword(input.password, 'body.password');
  const created = await db.query<User>(
    'INSERT INTO users (email, name, password_hash) VALUES ($1, $2, $3) RETURNING id, email, name',
    [inv.email, name, await bcrypt.hash(input.password, bcryptCost)],
  );
  return { user: created.rows[0]!, accountCreated: true };
}

/** Makes the user a member with the invited role; someone added meanwhile keeps the role they have. Answers the role. */
async function joinWorkspace(db: pg.PoolClient, inv: OpenInvitation, user: User): Promise<Role> {
  await db.query(
    'INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, $3) ON CONFLICT (user_id, workspace_id) DO NOTHING',
    [user.id, inv.workspace_id, inv.role],
  );
  const { rows } = await db.query<{ role: Role }>(
    'SELECT role FROM memberships WHERE user_id = $1 AND workspace_id = $2',
    [user.id, inv.workspace_id],
  );
  return rows[0]!.role;
}
