/**
 * The single-use tokens of e-mailed links (invitations, e-mail confirmations): 32 random bytes,
 * base64url. Only their SHA-256 is stored (a fast hash is enough for 256 random bits). The token
 * travels in the link's fragment (`…#token=…`), which browsers never send to a server, so it
 * reaches no request log; the page posts it to the API in a JSON body.
 */
import { createHash, randomBytes } from 'node:crypto';

export const newLinkToken = () => randomBytes(32).toString('base64url');
export const hashLinkToken = (token: string) => createHash('sha256').update(token).digest('hex');
