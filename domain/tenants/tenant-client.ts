/**
 * The TenantClient resource (§2.3, API version v1alpha1): parsing from YAML or JSON and validation
 * with one clear message per problem. Pure: used by the CLI, the controller and the tests alike. The
 * rules are written once, as the zod schema below; the CRD's schema (tenant-client-crd.ts) says the
 * same to the Kubernetes API server.
 *
 *   apiVersion: plana.dev/v1alpha1
 *   kind: TenantClient
 *   metadata: { name: acme }
 *   spec: { subdomain: acme, projectId: 42, tier: pro, erpVersion: "18", ownerEmail: …, ownerName: … }
 */
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { erpVersions, TENANT_CLIENT_API_VERSION, TENANT_CLIENT_KIND, tiers, type TenantClientSpec } from './types.js';

export interface TenantClient {
  apiVersion: typeof TENANT_CLIENT_API_VERSION;
  kind: typeof TENANT_CLIENT_KIND;
  metadata: { name: string };
  spec: TenantClientSpec;
}

export interface ResourceProblem {
  /** Where the problem is, e.g. `spec.subdomain`; `(document)` for the document as a whole. */
  field: string;
  message: string;
}

export type ValidationResult = { ok: true; value: TenantClient } | { ok: false; problems: ResourceProblem[] };

/** A DNS label (RFC 1123): what a subdomain, a database name part and a route host must be. */
const SUBDOMAIN = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
/** What a TenantClient document may cost to read: its size, YAML aliases, and nesting. */
export const MAX_DOCUMENT_BYTES = 64 * 1024;
export const MAX_ALIASES = 20;
export const MAX_DEPTH = 16;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const required = (what: string) => ({
  error: (issue: { input: unknown }) => (issue.input === undefined ? `is required (${what})` : `must be ${what}`),
});

export const MAX_NAME_LENGTH = 30;
/** What is wrong with a tenant name, as the CLI and the API server (tenant-client-crd.ts) both say it. */
export const NAME_MESSAGES = {
  empty: 'must not be empty',
  tooLong: `must be at most ${MAX_NAME_LENGTH} characters`,
  charset: 'must match [a-z0-9-]+ (lowercase letters, digits and hyphens only)',
  hyphen: 'must be a DNS label: it cannot start or end with a hyphen',
} as const;

/** A tenant name (= subdomain, = workspace slug), with the messages the CLI and the API show. */
export const tenantNameSchema = z
  .string(required('a string'))
  .min(1, NAME_MESSAGES.empty)
  .max(MAX_NAME_LENGTH, NAME_MESSAGES.tooLong)
  .regex(/^[a-z0-9-]+$/, NAME_MESSAGES.charset)
  .regex(/^(?!-)[\s\S]*[^-]$/, NAME_MESSAGES.hyphen)
  .describe('TenantClient name (= subdomain, = workspace slug): a DNS label of at most 30 characters');

const ERP_VERSION = {
  error: (issue: { input: unknown }) =>
    typeof issue.input === 'number'
      ? `must be a string: quote it ("${issue.input}"); one of "17", "18" (default), "19"`
      : 'must be one of "17", "18" (default), "19"',
};
/** No control characters (U+0000–U+001F, U+007F–U+009F) in any string: PostgreSQL, logs and terminals take none of them. */
export const CONTROL_CHARACTERS = /\p{Cc}/u;
export const CONTROL_CHARACTERS_MESSAGE = 'must not contain control characters';
const noControlCharacters = (s: string) => !CONTROL_CHARACTERS.test(s);

const specSchema = z.strictObject(
  {
    subdomain: tenantNameSchema.describe('equal to metadata.name'),
    projectId: z
      .number(required('an integer'))
      .int('must be an integer')
      .min(0, 'must not be negative')
      .max(2_147_483_647, 'must be at most 2147483647')
      .describe('chat room support-<subdomain>-<projectId padded to 6 digits>'),
    tier: z.enum(tiers, required('one of starter, pro, enterprise')),
    // a string, as the API server's schema says: an unquoted 18 is refused by both
    erpVersion: z.enum(erpVersions, ERP_VERSION).prefault('18'),
    // no trimming: what is valid is exactly what the CRD's schema says (tenant-client-crd.ts)
    ownerEmail: z
      .string(required('an e-mail address'))
      .max(320, 'must be at most 320 characters')
      .refine(noControlCharacters, CONTROL_CHARACTERS_MESSAGE)
      .regex(EMAIL, 'must be an e-mail address such as owner@example.com'),
    ownerName: z
      .string(required('a display name'))
      .min(1, 'must not be empty')
      .max(200, 'must be at most 200 characters')
      .refine(noControlCharacters, CONTROL_CHARACTERS_MESSAGE)
      .regex(/^$|\S/, 'must not be blank'),
  },
  {
    error: (issue) =>
      issue.code === 'unrecognized_keys'
        ? `has unknown fields: ${issue.keys.join(', ')}`
        : issue.input === undefined
          ? 'is required (a mapping with subdomain, projectId, tier, erpVersion, ownerEmail, ownerName)'
          : 'must be a mapping of fields',
  },
);

const resourceSchema = z
  .object(
    {
      apiVersion: z.literal(TENANT_CLIENT_API_VERSION, { error: `must be "${TENANT_CLIENT_API_VERSION}"` }),
      kind: z.literal(TENANT_CLIENT_KIND, { error: `must be "${TENANT_CLIENT_KIND}"` }),
      metadata: z.object({ name: tenantNameSchema }, { error: 'is required (a mapping with name)' }),
      spec: specSchema,
    },
    { error: 'must be a TenantClient mapping with apiVersion, kind, metadata and spec' },
  )
  .superRefine((r, ctx) => {
    // compared only when both are valid names, so one mistake gets one message
    const valid = (v: unknown) => typeof v === 'string' && v.length <= 30 && SUBDOMAIN.test(v);
    if (valid(r.spec?.subdomain) && valid(r.metadata?.name) && r.spec.subdomain !== r.metadata.name) {
      ctx.addIssue({
        code: 'custom',
        path: ['spec', 'subdomain'],
        message: `must equal metadata.name ("${r.metadata.name}")`,
      });
    }
  });

/** Validates an already parsed document (e.g. a JSON body). */
export function validateTenantClient(input: unknown): ValidationResult {
  const result = resourceSchema.safeParse(input);
  if (result.success) return { ok: true, value: result.data as TenantClient };
  const problems = result.error.issues.map((i) => ({
    field: i.path.length ? i.path.join('.') : '(document)',
    message: i.message,
  }));
  return { ok: false, problems };
}

const documentProblem = (message: string): ValidationResult => ({
  ok: false,
  problems: [{ field: '(document)', message }],
});

/** How deep a parsed value nests (iterative: a hostile document cannot overflow the stack here). */
function depthOf(root: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [value, depth] = stack.pop()!;
    if (!value || typeof value !== 'object') continue;
    max = Math.max(max, depth + 1);
    if (max > MAX_DEPTH) return max;
    for (const v of Object.values(value)) stack.push([v, depth + 1]);
  }
  return max;
}

/**
 * Parses YAML (or JSON, which is YAML) text holding one TenantClient, then validates it. The text
 * is bounded (size, aliases — a "billion laughs" document expands each alias many times over —
 * and nesting); anything over a bound is a problem with the document, like bad syntax.
 */
export function parseTenantClient(text: string): ValidationResult {
  if (Buffer.byteLength(text) > MAX_DOCUMENT_BYTES)
    return documentProblem(`is larger than ${MAX_DOCUMENT_BYTES / 1024} KiB`);
  let value: unknown;
  try {
    const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
    const first = doc.errors[0]?.message.split('\n')[0];
    if (first)
      return documentProblem(
        /call stack/i.test(first)
          ? 'is not valid YAML or JSON: it nests too deeply'
          : `is not valid YAML or JSON: ${first}`,
      );
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    // the yaml package throws ReferenceError for excessive aliases; a RangeError for a stack overflow
    const aliases = err instanceof ReferenceError && /alias/i.test(err.message);
    return documentProblem(
      aliases
        ? `uses YAML aliases too much (at most ${MAX_ALIASES} expansions)`
        : 'is not valid YAML or JSON: it nests too deeply',
    );
  }
  if (depthOf(value) > MAX_DEPTH) return documentProblem(`nests deeper than ${MAX_DEPTH} levels`);
  return validateTenantClient(value);
}

/** `spec.tier: must be one of …; spec.projectId: …` */
export function problemsDetail(problems: ResourceProblem[]): string {
  return problems.map((p) => `${p.field} ${p.message}`).join('; ');
}

/** True when two specs ask for the same tenant (applying the same spec again is a no-op). */
export function sameSpec(a: TenantClientSpec, b: TenantClientSpec): boolean {
  const keys: (keyof TenantClientSpec)[] = ['subdomain', 'projectId', 'tier', 'erpVersion', 'ownerEmail', 'ownerName'];
  return keys.every((k) => a[k] === b[k]);
}
