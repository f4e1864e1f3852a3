/** The TypeBox schemas of the team routes: members, invitations, the workspace a request names. */
import { Type } from 'typebox';
import { EmailAddress, TenantName, Text } from '../../../schemas/common.js';
import { SessionSchema } from '../../auth/sessions.js';

export const Role = Type.Union([Type.Literal('admin'), Type.Literal('member')]);
export const Problem = Type.Ref('Problem');
export const WorkspaceQuery = Type.Object({
  workspace: Type.Optional({ ...TenantName, description: 'workspace slug; or the X-Workspace header' }),
});

export const InvitationSchema = Type.Object({
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
export const MemberSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  email: Type.String(),
  role: Role,
  joinedAt: Type.String({ format: 'date-time' }),
});
export const MemberParams = Type.Object({
  userId: Type.String({ format: 'uuid', description: "the member's user id (GET /api/portal/team)" }),
});
export const InvitationParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
export const NewInvitation = Type.Object(
  { email: EmailAddress, role: Type.Optional({ ...Role, description: 'default member' }) },
  { additionalProperties: false },
);
/** What inviting and re-inviting may answer besides the invitation (they send an e-mail). */
export const MailingProblems = {
  400: Problem,
  401: Problem,
  403: Problem,
  409: Problem,
  429: Problem,
  502: Problem,
  503: Problem,
};
export const Acceptance = Type.Object(
  {
    token: Text({ minLength: 20, maxLength: 200 }),
    name: Type.Optional(Text({ minLength: 1, maxLength: 200 })),
    password: Text({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
);
export const AcceptedSession = Type.Intersect([
  SessionSchema,
  Type.Object({
    workspace: Type.Object({ id: Type.String(), slug: Type.String(), name: Type.String(), role: Role }),
    accountCreated: Type.Boolean(),
  }),
]);
