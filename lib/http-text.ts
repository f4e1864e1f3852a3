/**
 * The text the platform accepts: no NUL, no lone UTF-16 surrogate, nesting bounded by MAX_DEPTH.
 * `checkText` refuses (400) a request whose params, query, headers or body hold anything else.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { MAX_DEPTH } from './http-limits.js';
import { sendProblem } from './http-problems.js';

/** String.prototype.isWellFormed (ES2024, Node 20), not in this project's TypeScript lib. */
type WellFormedString = string & { isWellFormed(): boolean };

/** Why `s` is not text the platform accepts, or undefined when it is. */
export function textProblem(s: string): string | undefined {
  if (s.includes('\u0000')) return 'contains a NUL character (U+0000), which is not accepted in text';
  // a lone UTF-16 surrogate is not text, and not encodable as UTF-8 (PostgreSQL cannot store it)
  if (!(s as WellFormedString).isWellFormed()) return 'contains a lone UTF-16 surrogate, which is not text';
  return undefined;
}

/**
 * The JSON-schema form of the rule, for route schemas (so the OpenAPI document says it): no NUL.
 * Lone surrogates are not Unicode text, which a JSON-schema string is, so the pattern leaves them
 * out (and a range of surrogates would be a pattern other tools cannot compile); the check above
 * refuses them all the same.
 */
export const SAFE_TEXT_PATTERN = '^[^\\u0000]*$';

interface TextIssue {
  field: string;
  message: string;
}

/**
 * The first string (or key) of a parsed value that is not text, with its path. Recursion is
 * bounded by MAX_DEPTH; the path is built only for the value that fails, so a request whose text
 * is fine (every request but the rare hostile one) allocates nothing here.
 */
function findTextIssue(value: unknown, where: string): TextIssue | undefined {
  const found = issueIn(value, 0);
  return (
    found && { field: [where, ...found.path].join('.').replace(/\.\(a key\)$/, ' (a key)'), message: found.message }
  );
}

function issueIn(value: unknown, depth: number): { path: string[]; message: string } | undefined {
  if (typeof value === 'string') {
    const message = textProblem(value);
    return message ? { path: [], message } : undefined;
  }
  if (!value || typeof value !== 'object') return undefined;
  if (depth >= MAX_DEPTH) return { path: [], message: `nests deeper than ${MAX_DEPTH} levels` };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = issueIn(value[i], depth + 1);
      if (found) return (found.path.unshift(String(i)), found);
    }
    return undefined;
  }
  for (const key in value) {
    const message = textProblem(key);
    // the key itself is not echoed: it is what is wrong
    if (message) return { path: ['(a key)'], message };
    const found = issueIn((value as Record<string, unknown>)[key], depth + 1);
    if (found) return (found.path.unshift(key), found);
  }
  return undefined;
}

/** Refuses, with 400, a request whose params, query, headers or body hold text the platform does not accept. */
export function checkText(req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) {
  const issue =
    findTextIssue(req.params, 'params') ??
    findTextIssue(req.query, 'query') ??
    findTextIssue(req.headers, 'headers') ??
    findTextIssue(req.body, 'body');
  if (!issue) return done();
  void sendProblem(reply, 'BAD_REQUEST', `${issue.field} ${issue.message}.`, { errors: [issue] });
}
