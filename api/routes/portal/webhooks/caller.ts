/** Who may call the tenant webhook routes, and for which workspace. */
import type { FastifyRequest } from 'fastify';
import { access } from '../../../plugins/access.js';
import { AppError } from '../../../../lib/errors.js';

/** Workspace admins (session + X-Workspace) and keys with `webhooks:write`. */
export const write = { config: { access: access.adminOrKey('webhooks:write') } };

/** The workspace the caller acts on: the key's, or the admin's (X-Workspace). */
export function workspaceId(req: FastifyRequest): string {
  const id = req.workspace?.id ?? req.adminWorkspace?.id;
  if (!id) throw new AppError('UNAUTHORIZED', 'No workspace for this request.');
  return id;
}
