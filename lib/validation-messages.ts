/**
 * Schema-validation errors (ajv's, with `verbose` on) as sentences a person can act on, one per
 * field, in the caller's terms (`body.since`, `params.name`, `query.limit`): what was wrong and
 * what is accepted.
 *
 * - anyOf/oneOf: the alternative the caller evidently meant (the one that takes everything sent
 *   but the fields of another alternative, which are then said not to go with it; else the one
 *   whose errors reach deepest into what was sent, then the one with fewest errors) stands for the
 *   union; a union of constants or of types reads as one "must be one of" / "must be a … or a …";
 * - enums are listed when short (at most MAX_LISTED values); otherwise the schema's description
 *   (an example) and where the list is (the OpenAPI document);
 * - a pattern is described by the schema's `title` (what the value must be, e.g. "a DNS label: …"),
 *   else its `description`, never shown as a regular expression; a long enum by its `title`;
 * - bounds and formats in words ("at least 1 item", "a date and time (RFC 3339 …)").
 */

export interface ValidationIssue {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
  schema?: unknown;
  parentSchema?: { description?: unknown; properties?: Record<string, unknown> } & Record<string, unknown>;
  data?: unknown;
}

export interface FieldProblem {
  field: string;
  message: string;
}

/** Enums longer than this are not listed in a message. */
export const MAX_LISTED = 12;
/** Where a long list of accepted values can be read. */
const LIST_LOCATION = 'the API document at /docs lists them';

const FORMATS: Record<string, string> = {
  'date-time': 'a date and time (RFC 3339, e.g. 2026-01-31T09:00:00Z)',
  date: 'a date (YYYY-MM-DD, e.g. 2026-01-31)',
  time: 'a time (HH:MM:SS, e.g. 09:00:00)',
  uuid: 'a UUID (e.g. 3f2b8c1e-5d4a-4c1b-9a7e-0b6c2d1e4f5a)',
  email: 'an e-mail address',
  uri: 'an absolute URL (e.g. https://example.com/hook)',
  url: 'an absolute URL (e.g. https://example.com/hook)',
  hostname: 'a host name',
  ipv4: 'an IPv4 address',
  ipv6: 'an IPv6 address',
};

const TYPES: Record<string, string> = {
  string: 'text',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
  null: 'null',
};

/** What the caller sent, briefly: `"yesterday"`, `a number`, `a list`. */
function sent(data: unknown): string {
  if (typeof data === 'string') return JSON.stringify(data.length > 50 ? `${data.slice(0, 50)}…` : data);
  if (data === null) return 'null';
  if (Array.isArray(data)) return 'a list';
  if (typeof data === 'object') return 'an object';
  if (typeof data === 'number') return String(data);
  return typeof data;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
const list = (values: unknown[]) => values.map((v) => JSON.stringify(v)).join(', ');
const annotation = (issue: ValidationIssue, key: 'title' | 'description') => {
  const value = issue.parentSchema?.[key];
  return typeof value === 'string' ? value.replace(/\.$/, '') : undefined;
};

function fieldOf(part: string, issue: ValidationIssue): string {
  const path = issue.instancePath
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg) => (/^\d+$/.test(seg) ? `[${seg}]` : `.${seg}`))
    .join('');
  const named = (issue.params.missingProperty ?? issue.params.additionalProperty) as string | undefined;
  return `${part}${path}${named !== undefined ? `.${named}` : ''}`;
}

function sentence(issue: ValidationIssue): string {
  const p = issue.params;
  const data = issue.data;
  switch (issue.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties': {
      const known = Object.keys(issue.parentSchema?.properties ?? {});
      if (known.length === 0) return 'is not accepted here (no further fields are)';
      return `is not a field of this request; the fields are ${known.length <= MAX_LISTED ? known.join(', ') : `${known.slice(0, MAX_LISTED).join(', ')}, …`}`;
    }
    case 'type': {
      const types = String(p.type).split(',');
      return `must be ${types.map((t) => TYPES[t] ?? t).join(' or ')}, not ${sent(data)}`;
    }
    case 'enum': {
      const allowed = (p.allowedValues as unknown[]) ?? [];
      if (allowed.length <= MAX_LISTED) return `must be one of ${list(allowed)}, not ${sent(data)}`;
      const what = annotation(issue, 'title') ?? `one of ${allowed.length} values, e.g. ${list(allowed.slice(0, 3))}`;
      return `must be ${what}, not ${sent(data)} (${allowed.length} values are accepted; ${LIST_LOCATION})`;
    }
    case 'const':
      return `must be ${JSON.stringify(p.allowedValue)}, not ${sent(data)}`;
    case 'pattern': {
      const title = annotation(issue, 'title');
      if (title) return `must be ${title}, not ${sent(data)}`;
      const description = annotation(issue, 'description');
      return `is not in the accepted format${description ? ` (${description})` : ''}: ${sent(data)}`;
    }
    case 'format':
      return `must be ${FORMATS[String(p.format)] ?? `in the ${String(p.format)} format`}, not ${sent(data)}`;
    case 'minLength':
      return Number(p.limit) === 1
        ? 'must not be empty'
        : `must be at least ${plural(Number(p.limit), 'character')} long`;
    case 'maxLength':
      return `must be at most ${plural(Number(p.limit), 'character')} long${typeof data === 'string' ? ` (it has ${data.length})` : ''}`;
    case 'minItems':
      return Number(p.limit) === 1
        ? 'must have at least one item'
        : `must have at least ${plural(Number(p.limit), 'item')}`;
    case 'maxItems':
      return `must have at most ${plural(Number(p.limit), 'item')}${Array.isArray(data) ? ` (it has ${data.length})` : ''}`;
    case 'uniqueItems':
      return `must not repeat an item (items ${Number(p.j) + 1} and ${Number(p.i) + 1} are the same)`;
    case 'minimum':
      return `must be at least ${String(p.limit)}, not ${sent(data)}`;
    case 'maximum':
      return `must be at most ${String(p.limit)}, not ${sent(data)}`;
    case 'exclusiveMinimum':
      return `must be more than ${String(p.limit)}, not ${sent(data)}`;
    case 'exclusiveMaximum':
      return `must be less than ${String(p.limit)}, not ${sent(data)}`;
    case 'minProperties':
      return Number(p.limit) === 1
        ? 'must have at least one field'
        : `must have at least ${plural(Number(p.limit), 'field')}`;
    case 'maxProperties':
      return `must have at most ${plural(Number(p.limit), 'field')}`;
    case 'multipleOf':
      return `must be a multiple of ${String(p.multipleOf)}`;
    case 'unmatched':
      return 'is not in any of the accepted forms';
    case 'otherFormField':
      return `cannot be sent with ${(p.sentWith as string[]).join(' and ')}: the request takes ${String(p.forms)}`;
    default:
      return issue.message ?? 'is not valid';
  }
}

const depth = (issue: ValidationIssue) => (issue.instancePath === '' ? 0 : issue.instancePath.split('/').length - 1);

/** The fields of each alternative of a union of objects (none for an alternative that is no object). */
function alternativeFields(union: ValidationIssue): { fields: string[]; required: string[] }[] {
  const alternatives = Array.isArray(union.schema) ? (union.schema as Record<string, unknown>[]) : [];
  return alternatives.map((alt) => ({
    fields: Object.keys((alt?.properties as Record<string, unknown> | undefined) ?? {}),
    required: Array.isArray(alt?.required) ? (alt.required as string[]) : [],
  }));
}

/** "messageId, or since (and until)": what each alternative takes. */
function formsInWords(alternatives: { fields: string[]; required: string[] }[]): string {
  const forms = alternatives
    .filter((a) => a.fields.length > 0)
    .map(({ fields, required }) => {
      const optional = fields.filter((f) => !required.includes(f));
      if (required.length === 0) return optional.join(' and ');
      return `${required.join(' and ')}${optional.length ? ` (and ${optional.join(', ')})` : ''}`;
    });
  return forms.length <= 2 ? forms.join(', or ') : `${forms.slice(0, -1).join(', ')}, or ${forms.at(-1)}`;
}

/**
 * The issues that stand for one union (anyOf/oneOf) error at `unionPath`: a union of constants
 * or of plain types becomes one enum or type issue; otherwise the alternative the caller meant.
 * An alternative whose only issues are fields of another alternative (the caller sent the fields
 * of two forms together) is the one meant, and those fields are named as not going with it.
 */
function collapseUnion(union: ValidationIssue, branches: Map<string, ValidationIssue[]>): ValidationIssue[] {
  const all = [...branches.values()];
  const atUnion = (issues: ValidationIssue[]) => issues.length === 1 && issues[0]!.instancePath === union.instancePath;
  if (all.length > 0 && all.every((b) => atUnion(b) && (b[0]!.keyword === 'const' || b[0]!.keyword === 'enum'))) {
    const allowedValues = all.flatMap((b) =>
      b[0]!.keyword === 'const' ? [b[0]!.params.allowedValue] : (b[0]!.params.allowedValues as unknown[]),
    );
    return [{ ...union, keyword: 'enum', params: { allowedValues }, parentSchema: union.parentSchema }];
  }
  if (all.length > 0 && all.every((b) => atUnion(b) && b[0]!.keyword === 'type')) {
    return [{ ...union, keyword: 'type', params: { type: all.map((b) => String(b[0]!.params.type)).join(',') } }];
  }
  const alternatives = alternativeFields(union);
  const ofAnotherForm = (i: ValidationIssue) =>
    i.keyword === 'additionalProperties' &&
    i.instancePath === union.instancePath &&
    alternatives.some((a) => a.fields.includes(String(i.params.additionalProperty)));
  const fitting = all.filter((issues) => issues.every(ofAnotherForm)).sort((a, b) => a.length - b.length)[0];
  if (fitting) {
    const sent = union.data && typeof union.data === 'object' ? Object.keys(union.data) : [];
    const own = Object.keys(fitting[0]!.parentSchema?.properties ?? {});
    const sentWith = own.filter((f) => sent.includes(f));
    if (sentWith.length > 0)
      return fitting.map((i) => ({
        ...i,
        keyword: 'otherFormField',
        params: { ...i.params, sentWith, forms: formsInWords(alternatives) },
      }));
  }
  let best: ValidationIssue[] | undefined;
  for (const issues of all) {
    if (!best) best = issues;
    else {
      const [d, bd] = [Math.max(...issues.map(depth)), Math.max(...best.map(depth))];
      if (d > bd || (d === bd && issues.length < best.length)) best = issues;
    }
  }
  return best!;
}

/** Removes anyOf/oneOf errors and the alternatives the caller did not mean, outermost union first. */
function withUnionsCollapsed(issues: ValidationIssue[]): ValidationIssue[] {
  let current = issues;
  for (;;) {
    const union = current
      .filter((i) => i.keyword === 'anyOf' || i.keyword === 'oneOf')
      .sort((a, b) => a.schemaPath.length - b.schemaPath.length)[0];
    if (!union) return current;
    const prefix = `${union.schemaPath}/`;
    const branches = new Map<string, ValidationIssue[]>();
    for (const i of current) {
      if (!i.schemaPath.startsWith(prefix)) continue;
      const branch = i.schemaPath.slice(prefix.length).split('/')[0]!;
      branches.set(branch, [...(branches.get(branch) ?? []), i]);
    }
    const kept = branches.size > 0 ? collapseUnion(union, branches) : [{ ...union, keyword: 'unmatched' }];
    current = [...current.filter((i) => i !== union && !i.schemaPath.startsWith(prefix)), ...kept];
  }
}

/** One sentence per field, for a problem's `errors` and `detail`. `part`: body, query, params or headers. */
export function describeValidation(issues: ValidationIssue[], part: string): FieldProblem[] {
  const seen = new Set<string>();
  const out: FieldProblem[] = [];
  for (const issue of withUnionsCollapsed(issues)) {
    const problem = { field: fieldOf(part, issue), message: sentence(issue) };
    const key = `${problem.field} ${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(problem);
  }
  return out;
}
