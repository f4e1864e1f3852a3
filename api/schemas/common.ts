import { Type } from 'typebox';

/** RFC 9457 problem body, as every error of the API is sent. */
export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    requestId: Type.Optional(Type.String()),
    instance: Type.Optional(Type.String()),
  },
  { $id: 'Problem', additionalProperties: true },
);

export const problemRef = Type.Ref('Problem');

export const TenantName = Type.String({ pattern: '^[a-z0-9-]{1,30}$', description: 'TenantClient name (= subdomain)' });
