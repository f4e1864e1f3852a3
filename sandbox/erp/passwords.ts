/**
 * Passwords and API keys as Odoo stores them (passlib's CryptContext, `pbkdf2_sha512`):
 * `$pbkdf2-sha512$<rounds>$<salt>$<checksum>`, salt and checksum in passlib's adapted base64 (`.`
 * for `+`, no padding). The stand-in's own implementation of that format, so a platform that stored
 * or checked a hash differently would fail against it.
 */
import { pbkdf2, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2Async = promisify(pbkdf2);

const ab64encode = (b: Buffer) => b.toString('base64').replace(/=+$/, '').replace(/\+/g, '.');
const ab64decode = (s: string) => Buffer.from(s.replace(/\./g, '+'), 'base64');

/** passlib's hash of `secret` (Odoo's default is 600 000 rounds; the stand-in's data needs no more than these). */
export function hashPassword(secret: string, rounds = 25_000): string {
  const salt = randomBytes(16);
  return `$pbkdf2-sha512$${rounds}$${ab64encode(salt)}$${ab64encode(pbkdf2Sync(secret, salt, rounds, 64, 'sha512'))}`;
}

/** Whether `secret` matches the stored passlib hash (PBKDF2 on libuv's thread pool). */
export async function verifyPassword(secret: string, stored: string | null | undefined): Promise<boolean> {
  const [empty, scheme, roundsText, salt, checksum, ...rest] = stored?.split('$') ?? [];
  if (empty !== '' || scheme !== 'pbkdf2-sha512' || !salt || !checksum || rest.length) return false;
  const rounds = Number(roundsText);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 10_000_000) return false;
  const expected = ab64decode(checksum);
  if (expected.length === 0) return false;
  const actual = await pbkdf2Async(secret, ab64decode(salt), rounds, expected.length, 'sha512');
  return timingSafeEqual(expected, actual);
}
