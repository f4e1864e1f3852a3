/**
 * Workspaces, their users and memberships (the repository behind the ops API, interactive login,
 * the provisioning callback and the workspace page). Each function is one statement or one
 * transaction; what is refused is refused with the platform's typed errors.
 */
import type pg from 'pg';
import { withTransaction } from '../../lib/db.js';
import { AppError } from '../../lib/errors.js';

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  createdAt: Date;
}

const WORKSPACE_COLUMNS = 'id, slug, name, created_at AS "createdAt"';

export async function findWorkspace(db: pg.Pool | pg.PoolClient, slug: string): Promise<Workspace | undefined> {
  const { rows } = await db.query<Workspace>(`SELECT ${WORKSPACE_COLUMNS} FROM workspaces WHERE slug = $1`, [slug]);
  return rows[0];
}

/** The workspace, or 404 naming it. */
export async function getWorkspace(db: pg.Pool | pg.PoolClient, slug: string): Promise<Workspace> {
  const workspace = await findWorkspace(db, slug);
  if (!workspace) throw new AppError('NOT_FOUND', `Workspace "${slug}" does not exist.`);
  return workspace;
}

export interface AccountUser {
  id: string;
  email: string;
  name: string;
}

export async function findUserByEmail(pool: pg.Pool, email: string): Promise<AccountUser | undefined> {
  const { rows } = await pool.query<AccountUser>('SELECT id, email, name FROM users WHERE lower(email) = lower($1)', [
    email,
  ]);
  return rows[0];
}

/** The user's memberships with their roles, in one workspace (slug) or all of them. */
export async function membershipsOf(
  pool: pg.Pool,
  userId: string,
  slug?: string,
): Promise<{ id: string; slug: string; role: string }[]> {
  const { rows } = await pool.query<{ id: string; slug: string; role: string }>(
    `SELECT w.id, w.slug, m.role FROM memberships m JOIN workspaces w ON w.id = m.workspace_id
      WHERE m.user_id = $1 AND ($2::text IS NULL OR w.slug = $2)`,
    [userId, slug ?? null],
  );
  return rows;
}

/**
 * Adds a user to a workspace with a role: creates the user when the e-mail is new (with the
 * password hash given), else adds the existing one. An existing user's password changes only with
 * `resetPassword`; a password for an existing e-mail without it is a 409.
 */
export async function addUserToWorkspace(
  pool: pg.Pool,
  input: {
    workspace: string;
    email: string;
    role: 'admin' | 'member';
    name?: string;
    passwordHash: string | null;
    resetPassword?: boolean;
  },
): Promise<AccountUser & { created: boolean }> {
  const { workspace, email, role, name, passwordHash, resetPassword } = input;
  return withTransaction(pool, async (db) => {
    const ws = await getWorkspace(db, workspace);
    const inserted = await db.query<AccountUser>(
      `INSERT INTO users (email, name, password_hash) VALUES ($1, coalesce($2, ''), $3)
       ON CONFLICT (email) DO NOTHING RETURNING id, email, name`,
      [email, name ?? null, passwordHash],
    );
    let user = inserted.rows[0];
    const created = user !== undefined;
    if (!user) {
      // an existing account: its password changes only when asked for in so many words
      if (passwordHash && !resetPassword) {
        throw new AppError(
          'CONFLICT',
          `A user with this e-mail address already exists; leave the password out to add them to workspace "${workspace}" (CLI: --no-password), or set resetPassword to replace their password (CLI: --reset-password).`,
        );
      }
      const updated = await db.query<AccountUser>(
        `UPDATE users SET name = coalesce($2, name), password_hash = coalesce($3, password_hash)
          WHERE lower(email) = lower($1) RETURNING id, email, name`,
        [email, name ?? null, passwordHash],
      );
      user = updated.rows[0]!;
    }
    await setMembership(db, user.id, ws.id, role);
    return { ...user, created };
  });
}

async function setMembership(
  db: pg.PoolClient,
  userId: string,
  workspaceId: string,
  role: 'admin' | 'member',
): Promise<void> {
  await db.query(
    `INSERT INTO memberships (user_id, workspace_id, role) VALUES ($1, $2, $3)
     ON CONFLICT (user_id, workspace_id) DO UPDATE SET role = EXCLUDED.role`,
    [userId, workspaceId, role],
  );
}

/**
 * The workspace entry of a provisioned tenant (the provisioning callback): the workspace named
 * after the tenant, linked from its `tenants` row, with the owner as admin. Idempotent: a repeat
 * finds the entry (`created: false`). Concurrent callbacks for one tenant queue on its row.
 */
export async function ensureTenantWorkspace(
  pool: pg.Pool,
  input: { tenant: string; workspaceName?: string; ownerEmail: string; ownerName: string },
): Promise<{ workspace: Workspace; owner: AccountUser; created: boolean }> {
  const { tenant } = input;
  return withTransaction(pool, async (db) => {
    const found = await db.query<{ workspace_id: string | null }>(
      'SELECT workspace_id FROM tenants WHERE name = $1 FOR UPDATE',
      [tenant],
    );
    const row = found.rows[0];
    if (!row) throw new AppError('NOT_FOUND', `Tenant "${tenant}" is not known to the platform.`);

    let workspace: Workspace | undefined;
    let created = false;
    if (row.workspace_id) {
      workspace = (
        await db.query<Workspace>(`SELECT ${WORKSPACE_COLUMNS} FROM workspaces WHERE id = $1`, [row.workspace_id])
      ).rows[0];
    }
    if (!workspace) {
      const inserted = await db.query<Workspace>(
        `INSERT INTO workspaces (slug, name) VALUES ($1, $2) ON CONFLICT (slug) DO NOTHING RETURNING ${WORKSPACE_COLUMNS}`,
        [tenant, input.workspaceName ?? tenant],
      );
      workspace = inserted.rows[0] ?? (await getWorkspace(db, tenant));
      await db.query('UPDATE tenants SET workspace_id = $2 WHERE name = $1', [tenant, workspace.id]);
      created = true;
    }

    const user = await db.query<AccountUser>(
      `INSERT INTO users (email, name) VALUES ($1, $2)
       ON CONFLICT (email) DO UPDATE SET name = CASE WHEN users.name = '' THEN EXCLUDED.name ELSE users.name END
       RETURNING id, email, name`,
      [input.ownerEmail, input.ownerName],
    );
    const owner = user.rows[0]!;
    await setMembership(db, owner.id, workspace.id, 'admin');
    return { workspace, owner, created };
  });
}
