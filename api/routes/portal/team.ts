/**
 * The team (specification §4.1 `GET /api/portal/team`, `POST /api/portal/team/invite`): members
 * see who is in the workspace; admins also see open invitations, invite (admin or member),
 * re-invite and revoke, change a member's role and remove a member (never the last admin: 409;
 * a removed member's sessions end at once, domain/portal/team.ts). Accepting is public: the token of the e-mailed link is the credential.
 * A workspace key can do none of this (403, §5.2 rule 2).
 */
import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type { FastifyReply } from 'fastify';
import { AppError } from '../../../lib/errors.js';
import { startSession } from '../../../domain/access/login-sessions.js';
import { PasswordThrottle } from '../../../domain/access/login-throttle.js';
import {
  acceptInvitation,
  inviteToWorkspace,
  listInvitations,
  listMembers,
  resendInvitation,
  revokeInvitation,
  type InvitationDeps,
} from '../../../domain/portal/invitations.js';
import { PASSWORD_MIN_LENGTH } from '../../../domain/portal/passwords.js';
import { changeMemberRole, removeMember } from '../../../domain/portal/team.js';
import { access } from '../../plugins/access.js';
import { EmailAddress, TenantName, Text } from '../../schemas/common.js';
import { SessionSchema, sendSession } from '../auth/sessions.js';

const Role = Type.Union([Type.Literal('admin'), Type.Literal('member')]);
const Email = EmailAddress;
const Problem = Type.Ref('Problem');
const WorkspaceQuery = Type.Object({
  workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
});

const InvitationSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  email: Type.String(),
  role: Role,
  status: Type.Union([Type.Literal('pending'), Type.Literal('expired')]),
  invitedBy: Type.Union([Type.Object({ id: Type.String(), name: Type.String(), email: Type.String() }), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  lastSentAt: Type.String({ format: 'date-time' }),
  sentCount: Type.Integer({ description: 'how many times the invitation was mailed (re-invites included)' }),
  expiresAt: Type.String({ format: 'date-time' }),
});
const MemberSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  email: Type.String(),
  role: Role,
  joinedAt: Type.String({ format: 'date-time' }),
});

export default async function teamRoutes(fastify: FastifyInstance) {
  await fastify.register(cookie);
  memberRoutes(fastify);
  invitationRoutes(fastify);
  acceptInvitationRoute(fastify);
}

/** The members: list (with the open invitations for admins), change a role, remove. */
function memberRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { pool } = app.deps;

  app.get(
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

  const MemberParams = Type.Object({
    userId: Type.String({ format: 'uuid', description: "the member's user id (GET /api/portal/team)" }),
  });

  app.patch(
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

  app.delete(
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

/** An admin's invitations: invite, resend, revoke (e-mails within the workspace's hourly allowance). */
function invitationRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { config, pool } = app.deps;
  const invitationDeps = (): InvitationDeps => ({
    pool,
    mail: app.portalMail,
    publicUrl: config.API_PUBLIC_URL,
    ttlMs: config.INVITATION_TTL,
  });
  const spendInvitationMail = invitationMailAllowance(app.deps.redis, config.INVITATIONS_PER_HOUR);

  app.post(
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
        body: Type.Object(
          { email: Email, role: Type.Optional({ ...Role, description: 'default member' }) },
          { additionalProperties: false },
        ),
        response: {
          201: InvitationSchema,
          400: Problem,
          401: Problem,
          403: Problem,
          409: Problem,
          429: Problem,
          502: Problem,
          503: Problem,
        },
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

  app.post(
    '/api/portal/team/invitations/:id/resend',
    {
      config: { access: access.admin },
      schema: {
        tags: ['team'],
        summary: 'Re-invite: mail a new link (the previous link stops working) with a new expiry',
        params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
        querystring: WorkspaceQuery,
        response: {
          200: InvitationSchema,
          400: Problem,
          401: Problem,
          403: Problem,
          404: Problem,
          409: Problem,
          429: Problem,
          502: Problem,
          503: Problem,
        },
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

  app.delete(
    '/api/portal/team/invitations/:id',
    {
      config: { access: access.admin },
      schema: {
        tags: ['team'],
        summary: 'Revoke an invitation: its link stops working',
        params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
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

/** Accepting an invitation (public: the link's token is the credential), throttled like a login. */
function acceptInvitationRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { config, pool } = app.deps;
  const throttle = new PasswordThrottle(app.deps.redis, config);

  app.post(
    '/api/portal/team/invitations/accept',
    {
      config: { access: access.public },
      schema: {
        tags: ['team'],
        summary: "Accept an invitation with its link's token: joins the workspace and logs in",
        description:
          `A new address: \`name\` and \`password\` (at least ${PASSWORD_MIN_LENGTH} characters) create the account. An address that has an account: \`password\` is that account's. ` +
          'The answer is a session, as from POST /api/auth/login. 404: not a valid link (or replaced by a re-invite); 409: accepted already; 410: revoked or expired.',
        body: Type.Object(
          {
            token: Text({ minLength: 20, maxLength: 200 }),
            name: Type.Optional(Text({ minLength: 1, maxLength: 200 })),
            password: Text({ minLength: 1, maxLength: 1024 }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Intersect([
            SessionSchema,
            Type.Object({
              workspace: Type.Object({ id: Type.String(), slug: Type.String(), name: Type.String(), role: Role }),
              accountCreated: Type.Boolean(),
            }),
          ]),
          400: Problem,
          401: Problem,
          404: Problem,
          409: Problem,
          410: Problem,
          429: Problem,
        },
      },
    },
    async (req, reply) => {
      const accepted = await throttle.attempt(
        PasswordThrottle.loginKey(`invitation:${req.body.token}`, req.ip),
        () => acceptInvitation(pool, config.BCRYPT_COST, req.body),
        (seconds) => reply.header('retry-after', seconds),
      );
      const session = await startSession(pool, config, accepted.user);
      req.log.info(
        { workspaceId: accepted.workspace.id, userId: accepted.user.id, accountCreated: accepted.accountCreated },
        'invitation accepted',
      );
      return sendSession(app, reply, session, {
        workspace: { ...accepted.workspace, role: accepted.role },
        accountCreated: accepted.accountCreated,
      });
    },
  );
}
