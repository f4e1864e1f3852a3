/**
 * Managing the members of a workspace (admins only, api/routes/portal/team.ts): changing a member's
 * role and removing a member. A workspace always keeps one admin: the last admin can be neither
 * demoted nor removed (409). Concurrent changes are serialized on the workspace row, so two admins
 * removing each other at once cannot leave the workspace without one.
 *
 * Removal takes effect at once: the membership is read on every request (api/plugins/access.ts),
 * and every session of the removed person ends (their refresh tokens are revoked, and with them the
 * access tokens of those sessions; the auth service shares them). A person who belongs to other
 * workspaces too signs in again and keeps those. Workspace API keys belong to the workspace, not to
 * the person who created them: they stay (an admin revokes them on the API keys page).
 */
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';
import { endOtherSessions } from '../access/login-sessions.js';
import type { Role, TeamMember } from './invitations.js';

type Db = pg.PoolClient;

/** Locks the workspace (serializing team changes) and reads the member; 404 when the person is not one. */
async function lockedMember(
  db: Db,
  workspaceId: string,
  userId: string,
): Promise<{ role: Role; slug: string; email: string }> {
  const ws = await db.query<{ slug: string }>('SELECT slug FROM workspaces WHERE id = $1 FOR UPDATE', [workspaceId]);
  const { rows } = await db.query<{ role: Role; email: string }>(
    'SELECT m.role, u.email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND m.user_id = $2',
    [workspaceId, userId],
  );
  if (!rows[0])
    throw new AppError(
      'NOT_FOUND',
      `User "${userId}" is not a member of workspace "${ws.rows[0]?.slug ?? workspaceId}".`,
    );
  return { ...rows[0], slug: ws.rows[0]!.slug };
}

async function refuseLastAdmin(db: Db, workspaceId: string, slug: string, what: string): Promise<void> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM memberships WHERE workspace_id = $1 AND role = 'admin'`,
    [workspaceId],
  );
  if ((rows[0]?.n ?? 0) <= 1) {
    throw new AppError(
      'CONFLICT',
      `The last admin of workspace "${slug}" cannot be ${what}: make another member admin first.`,
    );
  }
}

async function memberView(db: Db, workspaceId: string, userId: string): Promise<TeamMember> {
  const { rows } = await db.query<TeamMember>(
    `SELECT u.id, u.name, u.email, m.role, m.created_at AS "joinedAt"
       FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 AND m.user_id = $2`,
    [workspaceId, userId],
  );
  return rows[0]!;
}

/** Sets a member's role; the same role again changes nothing. Demoting the last admin is a 409. */
export async function changeMemberRole(
  pool: pg.Pool,
  input: { workspaceId: string; userId: string; role: Role },
): Promise<{ member: TeamMember; changed: boolean }> {
  return withTransaction(pool, async (db) => {
    const current = await lockedMember(db, input.workspaceId, input.userId);
    if (current.role === input.role)
      return { member: await memberView(db, input.workspaceId, input.userId), changed: false };
    if (current.role === 'admin') await refuseLastAdmin(db, input.workspaceId, current.slug, 'demoted');
    await db.query('UPDATE memberships SET role = $3 WHERE workspace_id = $1 AND user_id = $2', [
      input.workspaceId,
      input.userId,
      input.role,
    ]);
    return { member: await memberView(db, input.workspaceId, input.userId), changed: true };
  });
}

/** Removes a member and ends every session of theirs; removing the last admin is a 409. */
export async function removeMember(
  pool: pg.Pool,
  input: { workspaceId: string; userId: string },
): Promise<{ sessionsEnded: number }> {
  return withTransaction(pool, async (db) => {
    const current = await lockedMember(db, input.workspaceId, input.userId);
    if (current.role === 'admin') await refuseLastAdmin(db, input.workspaceId, current.slug, 'removed');
    await db.query('DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2', [
      input.workspaceId,
      input.userId,
    ]);
    return { sessionsEnded: await endOtherSessions(db, input.userId, null) };
  });
}
