/**
 * The workspace a request names: the `X-Workspace` header and the `?workspace=` parameter, each
 * possibly given more than once (a repeated header arrives joined with commas, which no slug
 * contains). A request that names two different values is ambiguous: it is refused with 400 naming
 * them, never answered for one of them.
 */
import type { FastifyRequest } from 'fastify';
import { AppError } from '../../lib/errors.js';

const NONE: readonly string[] = [];

/** Every distinct non-empty workspace value of the request, header first; usually none. */
export function workspacesNamed(req: FastifyRequest): readonly string[] {
  const header = req.headers['x-workspace'];
  const query = (req.query as { workspace?: unknown } | undefined)?.workspace;
  // the common case, checked in place: this runs on every request of a workspace route
  if (header === undefined && query === undefined) return NONE;
  const values: string[] = [];
  const add = (v: unknown) => {
    if (typeof v === 'string' && v !== '' && !values.includes(v)) values.push(v);
  };
  for (const h of [header].flat()) if (typeof h === 'string') h.split(',').forEach((v) => add(v.trim()));
  for (const q of [query].flat()) add(q);
  return values;
}

/** The 400 for a request naming more than one workspace. */
export function ambiguousWorkspace(values: readonly string[]): AppError {
  return new AppError(
    'BAD_REQUEST',
    `The request names more than one workspace (${values.map((v) => `"${v}"`).join(' and ')}) in X-Workspace and ?workspace=; name one.`,
    { workspaces: values },
  );
}

/** The one workspace the request names (undefined when none); 400 when it names several. */
export function namedWorkspace(req: FastifyRequest): string | undefined {
  const values = workspacesNamed(req);
  if (values.length > 1) throw ambiguousWorkspace(values);
  return values[0];
}

/** An onRequest hook: refuses a request naming several workspaces before its body is read or validated. */
export async function refuseAmbiguousWorkspace(req: FastifyRequest): Promise<void> {
  namedWorkspace(req);
}
