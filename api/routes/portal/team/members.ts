/** The members: list (with the open invitations for admins), change a role, remove. */
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { listInvitations, listMembers } from '../../../../domain/portal/invitations.js';
import { changeMemberRole, removeMember } from '../../../../domain/portal/team.js';
import { access } from '../../../plugins/access.js';
import { InvitationSchema, MemberParams, MemberSchema, Problem, Role, WorkspaceQuery } from './schemas.js';

export function memberRoutes(fastify: FastifyInstance) {
  listTeamRoute(fastify);
  changeRoleRoute(fastify);
  removeMemberRoute(fastify);
}

function listTeamRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().get(
    '/api/portal/team',
    {
      config: { access: access.member },
      schema: {
        tags: ['team'],
        summary: "The workspace's members and their roles; for admins also the open invitations",
        querystring: WorkspaceQuery,
        response: {
          200: Type.Object({
            members: Type.Array(MemberSchema),
            invitations: Type.Optional(Type.Array(InvitationSchema, { description: 'admins only' })),
          }),
          400: Problem,
          401: Problem,
          403: Problem,
        },
      },
    },
    async (req) => {
      const ws = req.memberWorkspace!;
      const members = await listMembers(pool, ws.id);
      return ws.role === 'admin' ? { members, invitations: await listInvitations(pool, ws.id) } : { members };
    },
  );
}

function changeRoleRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().patch(
    '/api/portal/team/:userId',
    {
      config: { access: access.admin },
      schema: {
        tags: ['team'],
        summary: "Change a member's role (admins only)",
        description:
          "Takes effect on the member's next request (the role is read on every request). The same role again changes nothing. " +
          'The last admin cannot be demoted (409): make another member admin first.',
        params: MemberParams,
        querystring: WorkspaceQuery,
        body: Type.Object({ role: Role }, { additionalProperties: false }),
        response: { 200: MemberSchema, 400: Problem, 401: Problem, 403: Problem, 404: Problem, 409: Problem },
      },
    },
    async (req) => {
      const ws = req.adminWorkspace!;
      const { member, changed } = await changeMemberRole(pool, {
        workspaceId: ws.id,
        userId: req.params.userId,
        role: req.body.role,
      });
      if (changed)
        req.log.info(
          { workspaceId: ws.id, userId: member.id, role: member.role, by: req.user!.id },
          'member role changed',
        );
      return member as never;
    },
  );
}

function removeMemberRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().delete(
    '/api/portal/team/:userId',
    {
      config: { access: access.admin },
      schema: {
        tags: ['team'],
        summary: 'Remove a member from the workspace (admins only)',
        description:
          'The membership ends and every session of the removed person ends at once (refresh tokens revoked; their access tokens get 401 from the next request on). ' +
          "The workspace's API keys stay (they belong to the workspace). The last admin cannot be removed (409).",
        params: MemberParams,
        querystring: WorkspaceQuery,
        response: { 204: Type.Null(), 400: Problem, 401: Problem, 403: Problem, 404: Problem, 409: Problem },
      },
    },
    async (req, reply) => {
      const ws = req.adminWorkspace!;
      const { sessionsEnded } = await removeMember(pool, { workspaceId: ws.id, userId: req.params.userId });
      req.log.info(
        { workspaceId: ws.id, userId: req.params.userId, by: req.user!.id, sessionsEnded },
        'member removed',
      );
      return reply.code(204).send(null);
    },
  );
}
