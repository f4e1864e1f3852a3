/**
 * Who is calling a tenant's ERP: Odoo's login (`authenticate`), its per-call `check(db, uid,
 * password)` with a short cache of successful checks, the user's rights (groups and companies), and
 * the web sessions opened by `/web/session/authenticate`.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type pg from 'pg';
import { verifyPassword } from './passwords.js';
import { checkApiKey } from './apikeys.js';
import { accessDenied } from './odoo-errors.js';
import type { Route, TenantDatabases } from './tenant-databases.js';

/** The web session a request carries: Odoo's `session_id` cookie. */
const sessionIdOf = (req: IncomingMessage): string | undefined =>
  /(?:^|;\s*)session_id=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];

/** A user as the ORM sees it: groups by external id (implied ones included), allowed companies. */
export interface UserRights {
  uid: number;
  groups: Set<string>;
  companyIds: number[];
}

const AUTH_TTL_MS = 10_000;
/** Odoo's web sessions last a week without use. */
export const SESSION_TTL_MS = 7 * 24 * 3600 * 1000;

export class Credentials {
  private readonly verified = new Map<string, { ok: Promise<boolean>; until: number }>();

  constructor(private readonly tenants: TenantDatabases) {}

  async authenticate(route: Route, login: unknown, password: unknown): Promise<number | false> {
    // as Odoo: the database is opened first (a missing one is a fault whatever the credentials)
    const res = await this.tenants.onTenantDb(route, (db) =>
      db.query<{ id: number; password: string | null }>(
        'SELECT id, password FROM res_users WHERE login = $1 AND active AND NOT share',
        [String(login)],
      ),
    );
    if (typeof login !== 'string' || typeof password !== 'string' || !password) return false;
    const user = res.rows[0];
    if (!user) return false;
    if (await verifyPassword(password, user.password)) return user.id;
    // non-interactive (RPC) logins also take one of the user's API keys in the password slot
    return (await this.tenants.onTenantDb(route, (db) => checkApiKey(db, password))) === user.id ? user.id : false;
  }

  /** Odoo's `check(db, uid, password)`, with a short cache of successful checks as Odoo keeps. */
  async checkUser(route: Route, uid: unknown, password: unknown): Promise<UserRights> {
    if (typeof uid !== 'number' || typeof password !== 'string' || !password) throw accessDenied();
    const key = createHash('sha256').update(`${route.database}\0${uid}\0${password}`).digest('base64');
    return this.tenants.onTenantDb(route, async (db) => {
      let check = this.verified.get(key);
      if (!check || check.until < Date.now()) {
        // concurrent calls of one user share one password check
        const ok = db
          .query<{ password: string | null }>('SELECT password FROM res_users WHERE id = $1 AND active AND NOT share', [
            uid,
          ])
          .then(
            async (res) =>
              Boolean(res.rows[0]) &&
              ((await verifyPassword(password, res.rows[0]!.password)) || (await checkApiKey(db, password)) === uid),
          );
        check = { ok, until: Date.now() + AUTH_TTL_MS };
        this.verified.set(key, check);
        ok.then(
          (good) => good || this.verified.delete(key),
          () => this.verified.delete(key),
        );
      }
      if (!(await check.ok)) throw accessDenied();
      return rightsOf(db, uid);
    });
  }

  /** The rights of `uid` on the route's database (for a session or an API key already checked). */
  rights(route: Route, uid: number): Promise<UserRights> {
    return this.tenants.onTenantDb(route, (db) => rightsOf(db, uid));
  }
}

/** The user's groups with every group they imply, by external id; its allowed companies. */
async function rightsOf(db: pg.Pool, uid: number): Promise<UserRights> {
  const rights = await db.query<{ active: boolean; groups: string[]; companies: number[] }>(
    `WITH RECURSIVE g(id) AS (
       SELECT gid FROM res_groups_users_rel WHERE uid = $1
       UNION SELECT i.hid FROM res_groups_implied_rel i JOIN g ON i.gid = g.id)
     SELECT u.active,
            ARRAY(SELECT d.module || '.' || d.name FROM ir_model_data d JOIN g ON d.res_id = g.id WHERE d.model = 'res.groups') AS groups,
            ARRAY(SELECT cid FROM res_company_users_rel WHERE user_id = u.id ORDER BY cid = u.company_id DESC, cid) AS companies
       FROM res_users u WHERE u.id = $1`,
    [uid],
  );
  const row = rights.rows[0];
  if (!row?.active) throw accessDenied(); // deactivated since the check
  return { uid, groups: new Set(row.groups), companyIds: row.companies };
}

interface WebSession {
  database: string;
  uid: number;
  token: string;
  until: number;
}

/**
 * Odoo's web sessions (the `session_id` cookie). As in Odoo, a session is bound to the password
 * hash it was opened with (its session token): a password change, or a deactivated user, ends it.
 */
export class WebSessions {
  private readonly sessions = new Map<string, WebSession>();

  constructor(private readonly tenants: TenantDatabases) {}

  /** A new session of `uid`; answers its id (the cookie's value). */
  async open(route: Route, uid: number): Promise<string> {
    const token = await this.sessionToken(route, uid);
    const sid = randomBytes(30).toString('base64url');
    this.sessions.set(sid, { database: route.database, uid, token, until: Date.now() + SESSION_TTL_MS });
    return sid;
  }

  /**
   * What the tenant ingress does in front of Odoo (services/tenant-ingress/session-cookies.ts), for
   * the stand-in when it plays the ingress itself: a `session_id` this host did not issue (a session
   * of another tenant's database) is left out of the request, which is then signed out here, and the
   * session stays valid on its own host. Odoo itself, as `live` below, logs such a session out.
   */
  ignoreForeign(route: Route, req: IncomingMessage): void {
    const sid = sessionIdOf(req);
    const session = sid ? this.sessions.get(sid) : undefined;
    if (!session || session.database === route.database) return;
    const kept = (req.headers.cookie ?? '')
      .split(';')
      .map((c) => c.trim())
      .filter((c) => c !== '' && !c.startsWith('session_id='));
    if (kept.length > 0) req.headers.cookie = kept.join('; ');
    else delete req.headers.cookie;
  }

  /**
   * The request's web session of this tenant's database, while it lasts (else forgotten). As Odoo
   * with its dbfilter, a session of another database is logged out (forgotten) too.
   */
  async live(route: Route, req: IncomingMessage): Promise<WebSession | undefined> {
    const sid = sessionIdOf(req);
    const session = sid ? this.sessions.get(sid) : undefined;
    if (
      !session ||
      session.database !== route.database ||
      session.until < Date.now() ||
      (await this.sessionToken(route, session.uid).catch(() => null)) !== session.token
    ) {
      if (sid) this.sessions.delete(sid);
      return undefined;
    }
    return session;
  }

  /**
   * What a session is bound to (Odoo's session token): the user's password hash and active flag,
   * and with auth_oauth the last OAuth access token (a new OAuth sign-in ends the user's other sessions).
   */
  private async sessionToken(route: Route, uid: number): Promise<string> {
    const res = await this.tenants.onTenantDb(route, (db) =>
      // (a database of an older layout has no oauth_access_token column: read through the row's JSON)
      db.query<{ password: string | null; active: boolean; oauth: string | null }>(
        "SELECT password, active, to_jsonb(u) ->> 'oauth_access_token' AS oauth FROM res_users u WHERE id = $1",
        [uid],
      ),
    );
    const row = res.rows[0];
    if (!row?.active) throw accessDenied();
    return createHash('sha256')
      .update(`${uid}\0${row.password ?? ''}\0${row.oauth ?? ''}`)
      .digest('base64');
  }
}
