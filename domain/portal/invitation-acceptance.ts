/**
 * Accepting an invitation (invitations.ts) by its link's token: the invited address's account
 * (made now, proved by its password, or given its first password) joins the workspace with the
 * invited role, once. The owner's activation link (activation.ts) is an invitation too: the owner
 * is a member already and chooses a password by it.
 */
import bcrypt from 'bcrypt';
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import type { Role } from './roles.js';
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
  purpose: 'team' | 'activation';
}

/**
 * Accepts an invitation by its token. A new address: `name` and `password` create the account. An
 * address whose account has a password: `password` must be that one (401 otherwise; its name and
 * password stay as they are). An account without a password yet (an owner made by provisioning):
 * `password` becomes its password (and `name` its name, when it has none). 404 for a token that is
 * not (or no longer, after a re-invite) an invitation's, 409 once accepted, 410 when revoked or
 * expired. Concurrent accepts of one token queue on its row: exactly one succeeds.
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

/** An invitation's row as its token finds it. */
type InvitationRow = OpenInvitation & { accepted_at: Date | null; revoked_at: Date | null; expired: boolean };

const selectByToken = `SELECT id, workspace_id, email, role, purpose, accepted_at, revoked_at, expires_at <= now() AS expired
                         FROM workspace_invitations WHERE token_hash = $1`;

const NOT_A_LINK =
  'This invitation link is not valid: it may have been replaced by a newer invitation. Use the link of the latest invitation e-mail.';

/** What a link can still do: be accepted (open), or nothing any more, and why. */
export type LinkState = 'open' | 'used' | 'replaced' | 'revoked' | 'expired';

/** Why a link no longer works, in its holder's terms (an owner's activation link or a team invitation), and what to do. */
function deadLink(
  inv: InvitationRow,
): { state: Exclude<LinkState, 'open'>; code: 'CONFLICT' | 'GONE'; message: string } | undefined {
  const activation = inv.purpose === 'activation';
  if (inv.accepted_at)
    return {
      state: 'used',
      code: 'CONFLICT',
      message: activation
        ? 'This link was used already: your password is set. Sign in, or ask for a new link.'
        : 'This invitation was accepted already; log in instead.',
    };
  if (inv.revoked_at)
    return activation
      ? {
          state: 'replaced',
          code: 'GONE',
          message: 'This link was replaced by a newer one: use the latest welcome e-mail, or ask for a new link.',
        }
      : {
          state: 'revoked',
          code: 'GONE',
          message: 'This invitation was revoked; ask an admin of the workspace for a new one.',
        };
  if (inv.expired)
    return {
      state: 'expired',
      code: 'GONE',
      message: activation
        ? 'This link has expired: ask for a new one.'
        : 'This invitation has expired; ask an admin of the workspace to invite you again.',
    };
  return undefined;
}

/** The token's invitation, locked for this transaction; 404, 409 or 410 when it cannot be accepted. */
async function lockOpenInvitation(db: pg.PoolClient, token: string): Promise<OpenInvitation> {
  const inv = (await db.query<InvitationRow>(`${selectByToken} FOR UPDATE`, [hashLinkToken(token)])).rows[0];
  if (!inv) throw new AppError('NOT_FOUND', NOT_A_LINK);
  const dead = deadLink(inv);
  if (dead) throw new AppError(dead.code, dead.message);
  return inv;
}

export interface InvitationLinkState {
  purpose: 'team' | 'activation';
  state: LinkState;
  /** what the link's holder is told (for a dead link the same words as the acceptance's problem) */
  message: string;
  /** whether "send me a new link" (renewLink in activation.ts) mails one: not for a team invitation revoked or expired */
  renewable: boolean;
}

/**
 * What a link's token can still do, without using it (a page shows a dead link as such before
 * anyone types a password): 404 for a token that is not (or no longer) an invitation's.
 */
export async function invitationLinkState(pool: pg.Pool, token: string): Promise<InvitationLinkState> {
  const inv = (await pool.query<InvitationRow>(selectByToken, [hashLinkToken(token)])).rows[0];
  if (!inv) throw new AppError('NOT_FOUND', NOT_A_LINK);
  const dead = deadLink(inv);
  if (!dead)
    return {
      purpose: inv.purpose,
      state: 'open',
      message:
        inv.purpose === 'activation'
          ? 'This link works: choose your password.'
          : 'This invitation is open: join the workspace.',
      renewable: false,
    };
  return {
    purpose: inv.purpose,
    state: dead.state,
    message: dead.message,
    renewable: inv.purpose === 'activation' || dead.state === 'used',
  };
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
  if (account && !account.password_hash)
    return { user: await setFirstPassword(db, bcryptCost, account, input), accountCreated: false };
  if (account) {
    const ok = await bcrypt.compare(input.password, account.password_hash!);
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

/** An account without a password (made by provisioning) gets its first one, and `name` when it has none. */
async function setFirstPassword(
  db: pg.PoolClient,
  bcryptCost: number,
  account: User,
  input: { name?: string; password: string },
): Promise<User> {
  checkNewPassword(input.password, 'body.password');
  const { rows } = await db.query<User>(
    `UPDATE users SET password_hash = $2, name = CASE WHEN name = '' THEN coalesce($3, '') ELSE name END
      WHERE id = $1 RETURNING id, email, name`,
    [account.id, await bcrypt.hash(input.password, bcryptCost), input.name?.trim() || null],
  );
  return rows[0]!;
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
