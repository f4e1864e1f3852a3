/** An admin's invitations: invite, resend, revoke (e-mails within the workspace's hourly allowance). */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../../../../lib/errors.js';
import {
  inviteToWorkspace,
  resendInvitation,
  revokeInvitation,
  type InvitationDeps,
} from '../../../../domain/portal/invitations.js';
import { access } from '../../../plugins/access.js';
import {
  InvitationParams,
  InvitationSchema,
  MailingProblems,
  NewInvitation,
  Problem,
  WorkspaceQuery,
} from './schemas.js';

/** What the mailing routes share: the invitation domain's deps and the e-mail allowance. */
interface Mailing {
  invitationDeps: () => InvitationDeps;
  spendInvitationMail: (workspaceId: string, reply: FastifyReply) => Promise<void>;
}

export function invitationRoutes(fastify: FastifyInstance) {
  const { config, pool } = fastify.deps;
  const mailing: Mailing = {
    invitationDeps: () => ({
      pool,
      mail: fastify.portalMail,
      publicUrl: config.API_PUBLIC_URL,
      ttlMs: config.INVITATION_TTL,
    }),
    spendInvitationMail: invitationMailAllowance(fastify.deps.redis, config.INVITATIONS_PER_HOUR),
  };
  inviteRoute(fastify, mailing);
  resendInvitationRoute(fastify, mailing);
  revokeInvitationRoute(fastify);
}

/** One invitation e-mail of the workspace's hourly allowance; 429 with Retry-After beyond it. */
function invitationMailAllowance(redis: FastifyInstance['deps']['redis'], perHour: number) {
  const invitationMails = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: 'invitation-mails',
    points: perHour,
    duration: 3600,
  });
  return async function spendInvitationMail(workspaceId: string, reply: FastifyReply) {
    try {
      await invitationMails.consume(workspaceId);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      const retryAfter = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
      reply.header('retry-after', retryAfter);
      throw new AppError(
        'RATE_LIMITED',
        `This workspace has sent ${perHour} invitation e-mails in the last hour; retry after ${retryAfter} s.`,
      );
    }
  };
}

function inviteRoute(fastify: FastifyInstance, { invitationDeps, spendInvitationMail }: Mailing) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/portal/team/invite',
    {
      config: { access: access.admin },
      schema: {
        tags: ['team'],
        summary: 'Invite someone by e-mail as admin or member (admins only)',
        description:
          'Mails a single-use link to `{API_PUBLIC_URL}/w/<slug>/join#token=…` that works for INVITATION_TTL (7 days). ' +
          'An address that is a member already, or has an open invitation, gets 409 (re-invite that one). Nothing is kept when the mail cannot be sent (502/503). ' +
          'A workspace sends at most INVITATIONS_PER_HOUR (50) invitation e-mails an hour, re-invites included (429 with Retry-After).',
        querystring: WorkspaceQuery,
        body: NewInvitation,
        response: { 201: InvitationSchema, ...MailingProblems },
      },
    },
    async (req, reply) => {
      const ws = req.adminWorkspace!;
      await spendInvitationMail(ws.id, reply);
      const invitation = await inviteToWorkspace(invitationDeps(), {
        workspaceId: ws.id,
        email: req.body.email,
        role: req.body.role ?? 'member',
        invitedBy: req.user!.id,
      });
      req.log.info({ workspaceId: ws.id, invitationId: invitation.id, role: invitation.role }, 'invitation sent');
      // dates leave as RFC 3339 strings (the serializer formats them)
      return reply.code(201).send(invitation as never);
    },
  );
}

function resendInvitationRoute(fastify: FastifyInstance, { invitationDeps, spendInvitationMail }: Mailing) {
  fastify.withTypeProvider<TypeBoxTypeProvider>().post(
    '/api/portal/team/invitations/:id/resend',
    {
      config: { access: access.admin },
      schema: {
        tags: ['team'],
        summary: 'Re-invite: mail a new link (the previous link stops working) with a new expiry',
        params: InvitationParams,
        querystring: WorkspaceQuery,
        response: { 200: InvitationSchema, ...MailingProblems, 404: Problem },
      },
    },
    async (req, reply) => {
      const ws = req.adminWorkspace!;
      await spendInvitationMail(ws.id, reply);
      const invitation = await resendInvitation(invitationDeps(), {
        workspaceId: ws.id,
        id: req.params.id,
        sentBy: req.user!.id,
      });
      req.log.info(
        { workspaceId: ws.id, invitationId: invitation.id, sentCount: invitation.sentCount },
        'invitation sent again',
      );
      return invitation;
    },
  );
}

function revokeInvitationRoute(fastify: FastifyInstance) {
  const { pool } = fastify.deps;
  fastify.withTypeProvider<TypeBoxTypeProvider>().delete(
    '/api/portal/team/invitations/:id',
    {
      config: { access: access.admin },
      schema: {
        tags: ['team'],
        summary: 'Revoke an invitation: its link stops working',
        params: InvitationParams,
        querystring: WorkspaceQuery,
        response: { 204: Type.Null(), 400: Problem, 401: Problem, 403: Problem, 404: Problem, 409: Problem },
      },
    },
    async (req, reply) => {
      await revokeInvitation(pool, req.adminWorkspace!.id, req.params.id);
      req.log.info({ workspaceId: req.adminWorkspace!.id, invitationId: req.params.id }, 'invitation revoked');
      return reply.code(204).send(null);
    },
  );
}
