/**
 * auth_oauth's sign-up of someone the provider signed in who has no ERP user (`_auth_oauth_signin`
 * → auth_signup's `signup` → `_signup_create_user`, Odoo 18): allowed only when the database's
 * invitation scope (`ir.config_parameter` `auth_signup.invitation_scope`; 'b2b' when unset, but
 * auth_signup's install data sets 'b2c', so every fresh Odoo database has free sign-up) is 'b2c';
 * else auth_signup's "Signup is not allowed for uninvited users", which auth_oauth turns into
 * AccessDenied (oauth_error=3). The new user is a copy of the portal template user (a share user
 * without internal groups) whose login is the validation's email, else `provider_<id>_user_<sub>`
 * (`_generate_signup_values`). The copy fails, and so the sign-up, when the login is taken or the
 * provider's subject has a user already (auth_oauth's unique (oauth_provider_id, oauth_uid)), an
 * archived one too: a removed member whose archived ERP user is kept is not signed up again.
 */
import type pg from 'pg';

export const INVITATION_SCOPE_KEY = 'auth_signup.invitation_scope';

/** The claims auth_oauth signs up with (the ID token's). */
export interface SignupClaims {
  sub: string;
  email?: unknown;
  name?: unknown;
}

/** The new user's id; undefined when Odoo refuses the sign-up (scope 'b2b', or the login is taken). */
export async function signUpUninvited(
  db: pg.Pool,
  providerId: number,
  claims: SignupClaims,
  accessToken: string,
): Promise<number | undefined> {
  const scope = await db.query<{ value: string }>('SELECT value FROM ir_config_parameter WHERE key = $1', [
    INVITATION_SCOPE_KEY,
  ]);
  if ((scope.rows[0]?.value ?? 'b2b') !== 'b2c') return undefined;
  const email = typeof claims.email === 'string' ? claims.email : `provider_${providerId}_user_${claims.sub}`;
  const name = typeof claims.name === 'string' ? claims.name : email;
  const taken = await db.query(
    'SELECT 1 FROM res_users WHERE login = $1 OR (oauth_provider_id = $2 AND oauth_uid = $3)',
    [email, providerId, claims.sub],
  );
  if (taken.rowCount) return undefined;
  const partner = await db.query<{ id: number }>(
    'INSERT INTO res_partner (name, complete_name, email, active) VALUES ($1, $1, $2, true) RETURNING id',
    [name, email],
  );
  const user = await db.query<{ id: number }>(
    `INSERT INTO res_users (login, partner_id, company_id, active, share, oauth_provider_id, oauth_uid, oauth_access_token)
     VALUES ($1, $2, (SELECT min(id) FROM res_company), true, true, $3, $4, $5) RETURNING id`,
    [email, partner.rows[0]!.id, providerId, claims.sub, accessToken],
  );
  const id = user.rows[0]!.id;
  await db.query('INSERT INTO res_company_users_rel (cid, user_id) SELECT min(id), $1 FROM res_company', [id]);
  return id;
}
