import { Type, type TStringOptions } from 'typebox';
import { SAFE_TEXT_PATTERN } from '../../lib/http.js';

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

/**
 * Text the platform accepts (lib/http.ts checks every request once; this says it in the OpenAPI
 * document): no NUL, no lone UTF-16 surrogate, and always a maximum length.
 */
export const Text = (options: TStringOptions & { maxLength: number }) =>
  Type.String({ pattern: SAFE_TEXT_PATTERN, ...options });

/** A DNS label (RFC 1123): lowercase letters, digits and hyphens, not starting or ending with a hyphen. */
export const DNS_LABEL_PATTERN = '^[a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?$';

export const TenantName = Type.String({
  pattern: DNS_LABEL_PATTERN,
  maxLength: 30,
  // what a validation message says the value must be (lib/validation-messages.ts), whatever the field's description
  title:
    'a DNS label: lowercase letters a-z, digits and hyphens, starting and ending with a letter or digit, at most 30 characters (e.g. acme or acme-2)',
  description: 'TenantClient name (= subdomain, = workspace slug): a DNS label of at most 30 characters',
});

/** The problem answers every route may give, whatever it does (the account API's error handler, lib/http.ts). */
export const commonProblems = {
  400: problemRef,
  404: problemRef,
  405: problemRef,
  413: problemRef,
  414: problemRef,
  415: problemRef,
  431: problemRef,
  500: problemRef,
  503: problemRef,
};

/**
 * An e-mail address as the platform accepts it everywhere (the notifications service's `format:
 * "email"`, ajv-formats' full mode), written as a pattern so the OpenAPI document says exactly what is taken.
 */
export const EmailAddress = Type.String({
  pattern:
    "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?\\.)+[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$",
  minLength: 3,
  maxLength: 254,
  description: 'an e-mail address (local part @ a dotted domain)',
});

/** One call in a workspace's execution log, as the portal (PostgreSQL) and the ops API (the log store) answer it. */
export const ExecutionLogCall = Type.Object({
  id: Type.String({ description: "the call's id in the execution log (one line per id)" }),
  occurredAt: Type.String({ format: 'date-time' }),
  keyPrefix: Type.String(),
  method: Type.String(),
  route: Type.String(),
  status: Type.Integer(),
  latencyMs: Type.Number(),
  requestId: Type.String({ description: "the request's id, its trace id too (what a problem body's requestId names)" }),
});
