/**
 * The portal's one way to the account API: openapi-fetch typed by the generated `paths`
 * (schema.d.ts, from the API's own OpenAPI document: `npm run web:api`).
 *
 * Session: the access token lives in this module's memory only (never localStorage); the refresh
 * token is an HttpOnly, SameSite=Strict cookie scoped to /api/auth that JavaScript cannot read.
 * A reload or a new tab gets a fresh access token from POST /api/auth/refresh; the token is
 * renewed a minute before it expires, and a 401 is retried once after a refresh.
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

/** The shared problem body (its OpenAPI name is generated: def-0, titled Problem). */
export type Problem = components['schemas']['def-0'];
type Session = paths['/api/auth/login']['post']['responses']['200']['content']['application/json'];
export type User = Session['user'];

/** A problem answer of the API (RFC 9457), or a network failure, as one error with a readable message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Partial<Problem>,
  ) {
    super(problem.detail || problem.title || `The server answered ${status}.`);
  }
}

export const api = createClient<paths>({ baseUrl: '' });

let accessToken: string | undefined;
let user: User | undefined;
let renewTimer: ReturnType<typeof setTimeout> | undefined;
let refreshing: Promise<User | undefined> | undefined;
const listeners = new Set<(user: User | undefined) => void>();

api.use({
  onRequest({ request }) {
    if (accessToken && !request.headers.has('authorization'))
      request.headers.set('authorization', `Bearer ${accessToken}`);
    return request;
  },
});

/** Called with the user after sign-in or refresh, and with undefined once the session is gone. */
export function onSessionChange(fn: (user: User | undefined) => void): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** The signed-in person (undefined without a session). */
export const currentUser = (): User | undefined => user;

function startSession(s: Session): User {
  accessToken = s.accessToken;
  user = s.user;
  clearTimeout(renewTimer);
  renewTimer = setTimeout(() => void refresh(), Math.max(5, s.expiresIn - 60) * 1000);
  for (const fn of listeners) fn(s.user);
  return s.user;
}

function endSession() {
  accessToken = undefined;
  user = undefined;
  clearTimeout(renewTimer);
  for (const fn of listeners) fn(undefined);
}

async function problemOf(response: Response): Promise<ApiError> {
  const body = (await response.json().catch(() => ({}))) as Partial<Problem>;
  return new ApiError(response.status, body);
}

export async function signIn(email: string, password: string): Promise<User> {
  const { data, error, response } = await api.POST('/api/auth/login', { body: { email, password } });
  if (error || !data) throw new ApiError(response.status, (error ?? {}) as Partial<Problem>);
  return startSession(data);
}

/** Exchanges the refresh cookie for a new access token; undefined when there is no session. */
export function refresh(): Promise<User | undefined> {
  refreshing ??= (async () => {
    try {
      // the refresh token rotates and a reused one ends the session: tabs of the portal take turns
      // (Web Locks), so two tabs refreshing at once each send the newest cookie
      const send = () => fetch('/api/auth/refresh', { method: 'POST', credentials: 'same-origin' });
      const response = navigator.locks ? await navigator.locks.request('plana-session-refresh', send) : await send();
      if (!response.ok) {
        endSession();
        return undefined;
      }
      return startSession((await response.json()) as Session);
    } finally {
      refreshing = undefined;
    }
  })();
  return refreshing;
}

export async function signOut(): Promise<void> {
  await api.POST('/api/auth/logout').catch(() => undefined);
  endSession();
}

/**
 * Runs one typed call and returns its data, or throws ApiError with the problem's message. A 401
 * (the access token expired meanwhile) is retried once after a silent refresh.
 */
export async function call<T>(run: () => Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result = await run().catch((err: unknown) => {
    throw new ApiError(0, {
      title: 'The server could not be reached.',
      detail: err instanceof Error ? `The server could not be reached (${err.message}).` : undefined,
    });
  });
  if (result.response.status === 401 && accessToken && (await refresh())) result = await run();
  if (!result.response.ok) {
    if (result.error && typeof result.error === 'object')
      throw new ApiError(result.response.status, result.error as Partial<Problem>);
    throw await problemOf(result.response);
  }
  return result.data as T;
}

type AcceptBody = NonNullable<
  paths['/api/portal/team/invitations/accept']['post']['requestBody']
>['content']['application/json'];
type Accepted = paths['/api/portal/team/invitations/accept']['post']['responses']['200']['content']['application/json'];

/** Accepts an invitation with its link's token: the answer is a session, started here as after sign-in. */
export async function acceptInvitation(body: AcceptBody): Promise<Accepted> {
  const accepted = await call(() => api.POST('/api/portal/team/invitations/accept', { body }));
  startSession(accepted);
  return accepted;
}

/** The X-Workspace header: routes that take no `workspace` query (webhooks) name the workspace this way. */
export const inWorkspace = (slug: string) => ({ headers: { 'x-workspace': slug } });

/** Chooses a new password with a password link's token: the answer is a session (every other one has ended). */
export async function resetPassword(body: { token: string; password: string }): Promise<User> {
  return startSession(await call(() => api.POST('/api/auth/password/reset', { body })));
}
