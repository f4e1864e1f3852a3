/**
 * Team invitations (specification §4.1 `POST /api/portal/team/invite`): an admin invites an e-mail
 * address as admin or member; the invitation e-mail (through the notifications service) carries a
 * single-use link that expires (INVITATION_TTL). Accepting it creates the user (name + password)
 * or, for an address that already has an account, asks for that account's password; either way the
 * user joins the workspace with the invited role and gets a session. A re-invite gives a new token
 * (the old link is dead); a revoke kills the link. An invitation is accepted once and never twice.
 *
 * Every write and its e-mail share one transaction: when the mail cannot be sent, nothing is kept.
 */
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import type { NotificationsMailClient } from '../notifications/mail-client.js';
import { invitationEmail } from './emails.js';
import { hashLinkToken, newLinkToken } from './link-tokens.js';

import type { Role } from './roles.js';

export type { Role };

export interface Invitation {
  id: string;
  email: string;
  role: Role;
  status: 'pending' | 'expired';
  invitedBy: { id: string; name: string; email: string } | null;
  createdAt: Date;
  lastSentAt: Date;
  sentCount: number;
  expiresAt: Date;
}

export interface TeamMember {
  id: string;
  name: string;
  email: string;
  role: Role;
  joinedAt: Date;
}

export interface InvitationDeps {
  pool: pg.Pool;
  mail: NotificationsMailClient;
  /** API_PUBLIC_URL: the links point to `{API_PUBLIC_URL}/w/<slug>/join#token=…` (DESIGN §5). */
  publicUrl: string;
  /** How long a link works (ms). */
  ttlMs: number;
}

const INVITATION_COLUMNS = `i.id, i.email, i.role,
  CASE WHEN i.expires_at <= now() THEN 'expired' ELSE 'pending' END AS status,
  CASE WHEN u.id IS NULL THEN NULL ELSE json_build_object('id', u.id, 'name', u.name, 'email', u.email) END AS "invitedBy",
  i.created_at AS "createdAt", i.last_sent_at AS "lastSentAt", i.sent_count AS "sentCount", i.expires_at AS "expiresAt"`;

export const invitationLink = (publicUrl: string, slug: string, token: string) =>
  `${publicUrl.replace(/\/$/, '')}/w/${slug}/join#token=${token}`;

export async function listMembers(db: pg.Pool, workspaceId: string): Promise<TeamMember[]> {
  const { rows } = await db.query<TeamMember>(
    `SELECT u.id, u.name, u.email, m.role, m.created_at AS "joinedAt"
       FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.workspace_id = $1 ORDER BY m.created_at, u.email`,
    [workspaceId],
  );
  return rows;
}

/** The open invitations (not accepted, not revoked), expired ones included so an admin can re-invite. */
export async function listInvitations(
  db: pg.Pool | pg.PoolClient,
  workspaceId: string,
  id?: string,
): Promise<Invitation[]> {
  const { rows } = await db.query<Invitation>(
    `SELECT ${INVITATION_COLUMNS} FROM workspace_invitations i LEFT JOIN users u ON u.id = i.invited_by
      WHERE i.workspace_id = $1 AND i.purpose = 'team' AND i.accepted_at IS NULL AND i.revoked_at IS NULL
        AND ($2::uuid IS NULL OR i.id = $2::uuid)
      ORDER BY i.created_at`,
    [workspaceId, id ?? null],
  );
  return rows;
}

async function sendInvitation(
  deps: InvitationDeps,
  db: pg.PoolClient,
  inv: {
    id: string;
    email: string;
    role: Role;
    sentCount: number;
    expiresAt: Date;
    invitedBy: string;
    workspaceId: string;
  },
  token: string,
) {
  const ws = (
    await db.query<{ slug: string; name: string }>('SELECT slug, name FROM workspaces WHERE id = $1', [inv.workspaceId])
  ).rows[0]!;
  const inviter = (
    await db.query<{ name: string; email: string }>('SELECT name, email FROM users WHERE id = $1', [inv.invitedBy])
  ).rows[0];
  await deps.mail.send(
    invitationEmail({
      to: inv.email,
      workspaceName: ws.name,
      slug: ws.slug,
      role: inv.role,
      invitedBy: inviter ? inviter.name || inviter.email : `An admin of ${ws.name}`,
      link: invitationLink(deps.publicUrl, ws.slug, token),
      expiresAt: inv.expiresAt,
    }),
    `invitation:${inv.id}:${inv.sentCount}`,
  );
}

/**
 * Invites `email` to the workspace. 409 when the address is already a member, or has an open
 * invitation that has not expired (re-invite that one instead); an expired one is replaced.
 */
export async function inviteToWorkspace(
  deps: InvitationDeps,
  input: { workspaceId: string; email: string; role: Role; invitedBy: string },
): Promise<Invitation> {
  const email = input.email.trim();
  return withTransaction(deps.pool, async (db) => {
    const member = await db.query(
      `SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND lower(u.email) = lower($2)`,
      [input.workspaceId, email],
    );
    if (member.rowCount) throw new AppError('CONFLICT', `${email} is already a member of this workspace.`);
    const open = await db.query<{ id: string; expired: boolean }>(
      // an owner's open activation link (purpose 'activation') counts as expired: a team invitation replaces it
      `SELECT id, expires_at <= now() OR purpose <> 'team' AS expired FROM workspace_invitations
        WHERE workspace_id = $1 AND lower(email) = lower($2) AND accepted_at IS NULL AND revoked_at IS NULL FOR UPDATE`,
      [input.workspaceId, email],
    );
    const existing = open.rows[0];
    if (existing && !existing.expired) {
      throw new AppError(
        'CONFLICT',
        `${email} already has an open invitation (${existing.id}); re-invite with POST /api/portal/team/invitations/${existing.id}/resend, or revoke it.`,
        {
          invitationId: existing.id,
        },
      );
    }
    if (existing) await db.query('UPDATE workspace_invitations SET revoked_at = now() WHERE id = $1', [existing.id]);
    const token = newLinkToken();
    const { rows } = await db.query<{ id: string; expires_at: Date }>(
      `INSERT INTO workspace_invitations (workspace_id, email, role, token_hash, invited_by, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + $6 * interval '1 millisecond') RETURNING id, expires_at`,
      [input.workspaceId, email, input.role, hashLinkToken(token), input.invitedBy, deps.ttlMs],
    );
    const row = rows[0]!;
    await sendInvitation(deps, db, { ...input, email, id: row.id, sentCount: 1, expiresAt: row.expires_at }, token);
    return (await listInvitations(db, input.workspaceId, row.id))[0]!;
  });
}

/** Re-invite: a new token and a new expiry, mailed again; the previous link is dead from now on. */
export async function resendInvitation(
  deps: InvitationDeps,
  input: { workspaceId: string; id: string; sentBy: string },
): Promise<Invitation> {
  return withTransaction(deps.pool, async (db) => {
    const found = await db.query<{ email: string; role: Role; accepted_at: Date | null; revoked_at: Date | null }>(
      `SELECT email, role, accepted_at, revoked_at FROM workspace_invitations
        WHERE id = $1 AND workspace_id = $2 AND purpose = 'team' FOR UPDATE`,
      [input.id, input.workspaceId],
    );
    const inv = found.rows[0];
    if (!inv) throw new AppError('NOT_FOUND', `This workspace has no invitation ${input.id}.`);
    if (inv.accepted_at) throw new AppError('CONFLICT', 'This invitation was accepted already.');
    if (inv.revoked_at)
      throw new AppError(
        'CONFLICT',
        'This invitation was revoked; invite the address again with POST /api/portal/team/invite.',
      );
    const token = newLinkToken();
    const { rows } = await db.query<{ sent_count: number; expires_at: Date }>(
      `UPDATE workspace_invitations
          SET token_hash = $2, sent_count = sent_count + 1, last_sent_at = now(), expires_at = now() + $3 * interval '1 millisecond', invited_by = $4
        WHERE id = $1 RETURNING sent_count, expires_at`,
      [input.id, hashLinkToken(token), deps.ttlMs, input.sentBy],
    );
    await sendInvitation(
      deps,
      db,
      {
        id: input.id,
        email: inv.email,
        role: inv.role,
        sentCount: rows[0]!.sent_count,
        expiresAt: rows[0]!.expires_at,
        invitedBy: input.sentBy,
        workspaceId: input.workspaceId,
      },
      token,
    );
    return (await listInvitations(db, input.workspaceId, input.id))[0]!;
  });
}

/** Revoke: the link stops working. Revoking twice is fine; an accepted invitation cannot be revoked (409). */
export async function revokeInvitation(pool: pg.Pool, workspaceId: string, id: string): Promise<void> {
  const { rows } = await pool.query<{ accepted: boolean }>(
    `UPDATE workspace_invitations SET revoked_at = coalesce(revoked_at, now())
      WHERE id = $1 AND workspace_id = $2 AND purpose = 'team' RETURNING accepted_at IS NOT NULL AS accepted`,
    [id, workspaceId],
  );
  if (!rows[0]) throw new AppError('NOT_FOUND', `This workspace has no invitation ${id}.`);
  if (rows[0].accepted)
    throw new AppError('CONFLICT', 'This invitation was accepted already; the person is a member now.');
}
