/**
 * Interactive login on routes (specification §5.2 rule 2, §5.6): hooks that demand a user's access
 * token (`Authorization: Bearer <JWT from /api/auth/login>`) and, for workspace configuration, that
 * the user be an admin of the workspace concerned. A workspace API key is refused with 403: it can
 * never manage keys, team or settings.
 *
 * Which workspace: the `X-Workspace` header (or `?workspace=`) names it by slug; when absent and
 * the user belongs to exactly one workspace, that one. Otherwise 400 asking for it; a request naming
 * two different workspaces (header and query, or either twice) is a 400 naming both (named-workspace.ts).
 */
import type { FastifyRequest } from 'fastify';
import { TOKEN_PREFIX } from '../../domain/access/api-keys.js';
import { AppError } from '../../lib/errors.js';
import { verifyAccessSession } from '../../domain/access/login-sessions.js';
import { membershipsOf } from '../../domain/access/workspaces.js';
import { namedWorkspace } from './named-workspace.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by requireUser: the logged-in user and the session (refresh-token family) of the access token. */
    user?: { id: string; sessionId: string };
    /** Set by requireWorkspaceAdmin: the workspace the admin acts on. */
    adminWorkspace?: { id: string; slug: string };
    /** Set by requireWorkspaceMember and requireWorkspaceAdmin: the workspace named and the user's role in it. */
    memberWorkspace?: { id: string; slug: string; role: 'admin' | 'member' };
  }
}

export function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}

export async function requireUser(req: FastifyRequest): Promise<void> {
  const token = bearer(req);
  if (!token)
    throw new AppError(
      'UNAUTHORIZED',
      'This endpoint needs an interactive login: send the access token from POST /api/auth/login as Authorization: Bearer.',
    );
  if (token.startsWith(TOKEN_PREFIX)) {
    throw new AppError(
      'FORBIDDEN',
      'Workspace API keys cannot do this; it needs an interactive login (POST /api/auth/login).',
    );
  }
  const { userId, sessionId } = await verifyAccessSession(req.server.deps.pool, req.server.deps.config, token);
  req.user = { id: userId, sessionId };
}

/** Run after requireUser: the user must be an admin of the workspace named by X-Workspace. */
export async function requireWorkspaceAdmin(req: FastifyRequest): Promise<void> {
  const row = await workspaceMembership(req);
  if (row.role !== 'admin') throw new AppError('FORBIDDEN', `Only admins of workspace "${row.slug}" can do this.`);
  req.adminWorkspace = { id: row.id, slug: row.slug };
}

/** Run after requireUser: the user must be a member (any role) of the workspace named by X-Workspace. */
export async function requireWorkspaceMember(req: FastifyRequest): Promise<void> {
  await workspaceMembership(req);
}

async function workspaceMembership(
  req: FastifyRequest,
): Promise<{ id: string; slug: string; role: 'admin' | 'member' }> {
  if (!req.user) throw new AppError('UNAUTHORIZED', 'This endpoint needs an interactive login.');
  const slug = namedWorkspace(req);
  const rows = await membershipsOf(req.server.deps.pool, req.user.id, slug);
  if (!slug && rows.length > 1) {
    throw new AppError(
      'BAD_REQUEST',
      `You belong to several workspaces (${rows.map((r) => r.slug).join(', ')}); name one in the X-Workspace header.`,
    );
  }
  const row = rows[0];
  if (!row)
    throw new AppError(
      'FORBIDDEN',
      slug ? `You are not a member of workspace "${slug}".` : 'You are not a member of any workspace.',
    );
  const membership = {
    id: row.id,
    slug: row.slug,
    role: row.role === 'admin' ? ('admin' as const) : ('member' as const),
  };
  req.memberWorkspace = membership;
  return membership;
}
