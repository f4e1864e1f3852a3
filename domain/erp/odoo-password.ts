/**
 * ERP user passwords stored the way Odoo stores them: passlib's `pbkdf2_sha512` format,
 * `$pbkdf2-sha512$<rounds>$<salt>$<checksum>` (adapted base64: `.` for `+`, no padding).
 */
import { pbkdf2, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2Async = promisify(pbkdf2);

const ab64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '').replace(/\+/g, '.');
const fromAb64 = (s: string) => Buffer.from(s.replace(/\./g, '+'), 'base64');

/** Odoo uses 600 000 rounds; the platform's users are machine accounts with long random passwords. */
export function hashOdooPassword(password: string, rounds = 25_000): string {
  const salt = randomBytes(16);
  const checksum = pbkdf2Sync(password, salt, rounds, 64, 'sha512');
  return `$pbkdf2-sha512$${rounds}$${ab64(salt)}$${ab64(checksum)}`;
}

/** Checks a password against a stored hash, off the event loop (PBKDF2 runs on libuv's thread pool). */
export async function verifyOdooPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  const parts = stored?.split('$');
  if (!parts || parts.length !== 5 || parts[1] !== 'pbkdf2-sha512') return false;
  const rounds = Number(parts[2]);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 10_000_000) return false;
  const expected = fromAb64(parts[4]!);
  const actual = await pbkdf2Async(password, fromAb64(parts[3]!), rounds, expected.length || 64, 'sha512');
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
