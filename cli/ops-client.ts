/**
 * The CLI talks to the internal ops API over HTTP with the operator's service key (operator →
 * account-api), like any operator tool: one code path for a request, whether it comes from the CLI
 * or from another system. The key: OPS_API_KEY from the environment when set (an operator's machine
 * outside the cluster, CI), otherwise the current version in the local secret store (DATABASE_URL +
 * SECRETS_KEY; what `npm run dev` and the tests use). It is never printed.
 */
import { config } from '../lib/config.js';
import { createPool } from '../lib/db.js';
import { PgSecretStore } from '../domain/service-keys/secret-store.js';

export const OPERATOR_CALLER = 'operator';

let operatorKey: Promise<string> | undefined;
async function readOperatorKey(): Promise<string> {
  const cfg = config();
  // read at call time, like PLANA_API_URL (the CLI also runs inside a process whose configuration was parsed before)
  const explicit = process.env.OPS_API_KEY || cfg.OPS_API_KEY;
  if (explicit) return explicit;
  const pool = createPool(cfg.DATABASE_URL, 1);
  try {
    return (await new PgSecretStore(pool, cfg.SECRETS_KEY).current(OPERATOR_CALLER, 'account-api')).key;
  } catch (err) {
    throw new OpsApiError(
      0,
      `No operator key: set OPS_API_KEY, or reach the secret store at DATABASE_URL (${(err as Error).message}).`,
    );
  } finally {
    await pool.end();
  }
}

export class OpsApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Which flag or argument of the command an API field came from, e.g. { 'body.reason': '--reason', 'params.name': '<name>' }. */
export type CliTerms = Record<string, string>;

/**
 * A problem answer in the words of the command that sent the request: each `errors[].field` (or a
 * field named in the detail) the command sent becomes the flag or argument it came from, and the
 * same sentence is said once.
 */
export function problemInCliTerms(
  problem: { detail?: string; errors?: { field: string; message: string }[] } | undefined,
  terms: CliTerms,
  fallback: string,
): string {
  const rename = (text: string) =>
    Object.entries(terms).reduce(
      (t, [field, term]) => t.replace(new RegExp(`(?<![\\w.])${field.replace(/\./g, '\\.')}(?![\\w])`, 'g'), term),
      text,
    );
  if (problem?.errors?.length)
    return [...new Set(problem.errors.map((e) => rename(`${e.field} ${e.message}`)))].join('; ');
  return problem?.detail ? rename(problem.detail) : fallback;
}

export async function opsRequest<T>(method: string, path: string, body?: unknown, terms: CliTerms = {}): Promise<T> {
  const cfg = config();
  const base = process.env.PLANA_API_URL ?? cfg.API_PUBLIC_URL;
  operatorKey ??= readOperatorKey();
  const key = await operatorKey;
  let res: Response;
  try {
    res = await fetch(new URL(path, base), {
      method,
      headers: {
        'x-api-key': key,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new OpsApiError(
      0,
      `Cannot reach the account API at ${base} (${(err as Error).message}). Is \`npm run dev\` running?`,
    );
  }
  const text = await res.text();
  const json = text ? JSON.parse(text) : undefined;
  if (!res.ok) throw new OpsApiError(res.status, problemInCliTerms(json, terms, `${res.status} ${res.statusText}`));
  return json as T;
}
