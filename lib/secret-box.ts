/**
 * Encrypts stored secrets (e.g. a tenant's ERP API password) with AES-256-GCM under SECRETS_KEY.
 * Format: `v1.<iv>.<tag>.<ciphertext>`, each part base64url.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export function seal(plaintext: string, keyBase64: string): string {
  const key = Buffer.from(keyBase64, 'base64');
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), data]
    .map((p) => (typeof p === 'string' ? p : p.toString('base64url')))
    .join('.');
}

export function open(sealed: string, keyBase64: string): string {
  const [version, iv, tag, data] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('not a sealed secret');
  const decipher = createDecipheriv('aes-256-gcm', Buffer.from(keyBase64, 'base64'), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * A key for one purpose derived from SECRETS_KEY (HKDF-SHA256, the purpose as its info), in the
 * same base64 form: what is sealed for one purpose never opens as another's.
 */
export function purposeKey(keyBase64: string, purpose: string): string {
  return Buffer.from(hkdfSync('sha256', Buffer.from(keyBase64, 'base64'), Buffer.alloc(0), purpose, 32)).toString(
    'base64',
  );
}
