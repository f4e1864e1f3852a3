/**
 * The platform's accounts as the OpenID provider's login page checks them: e-mail and password
 * against the users table (the same bcrypt hashes and the same answer for a wrong e-mail or a wrong
 * password as the account API's login).
 */
import bcrypt from 'bcrypt';
import type pg from 'pg';
import { AppError } from '../../lib/errors.js';
import { INVALID_LOGIN } from '../access/login-sessions.js';

export interface Account {
  id: string;
  email: string;
  name: string;
}

const DUMMY_HASH = bcrypt.hashSync('not-a-password', 10);

/** The account with this e-mail and password; AppError UNAUTHORIZED otherwise. */
export async function accountWithPassword(pool: pg.Pool, email: string, password: string): Promise<Account> {
  const { rows } = await pool.query<Account & { password_hash: string | null }>(
    'SELECT id, email, name, password_hash FROM users WHERE lower(email) = lower($1)',
    [email],
  );
  const row = rows[0];
  const ok = await bcrypt.compare(password, row?.password_hash ?? DUMMY_HASH);
  if (!row || !row.password_hash || !ok) throw new AppError('UNAUTHORIZED', INVALID_LOGIN);
  return { id: row.id, email: row.email, name: row.name };
}
