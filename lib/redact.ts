/**
 * What a credential looks like, in one place: the log redaction (lib/logger.ts) and the account
 * API's refusal of credentials in a query string (api/plugins/query-credentials.ts) both use it.
 *
 * - a query parameter named like a credential: its name, without `-`/`_` and in lower case, ends in
 *   key, token, secret, password, passwd or pwd (`api_key`, `access_token`, `X-API-Key`,
 *   `client_secret`), or is auth, authorization, bearer, jwt or credential(s); `keyPrefix` is not
 *   one (a key's public look-up prefix);
 * - a value shaped like a credential: a workspace key (`ws_live_` and more than a look-up prefix's
 *   8 characters), a webhook signing secret (`whsec_…`), a JWT (`eyJ….eyJ….…`), or a bearer
 *   credential (`Bearer …`).
 */

const CREDENTIAL_NAME = /(key|token|secret|password|passwd|pwd)$|^(auth|authorization|bearer|jwt|credentials?)$/;
/** The OAuth 2.0 redirect's one-time values: never logged, but accepted where a provider sends them. */
const OAUTH_REDIRECT_PARAM = /^(code|state|sessionstate)$/;

const WORKSPACE_KEY = /\bws_live_([A-Za-z0-9]{8})[A-Za-z0-9]{4,}/g;
const WEBHOOK_SECRET = /\bwhsec_[A-Za-z0-9+/=_-]+/g;
const JWT = /\beyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
const BEARER = /\b(Bearer|Basic)\s+[^\s"',;]+/gi;
/** A service key (X-API-Key of the platform's services: 64 hex characters). */
const SERVICE_KEY = /\b[0-9a-f]{64}\b/g;
/** `password=…`, `"token": "…"`, `X-API-Key: …` inside a message. */
const NAMED_SECRET =
  /\b((?:x-api-key|api[_-]?key|access[_-]?token|refresh[_-]?token|client[_-]?secret|password|passwd|secret|token|authorization)["']?\s*[:=]\s*["']?)(?!(?:Bearer|Basic) )[^\s"'&,;})]+/gi;
/** `scheme://user:password@host` */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi;
/** An e-mail address (personal data): a driver's or database's message may quote one. */
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b/g;

const CREDENTIAL_VALUE = new RegExp(
  `${WORKSPACE_KEY.source}|${WEBHOOK_SECRET.source}|${JWT.source}|^(Bearer|Basic) [A-Za-z0-9._~+/=-]{8,}$`,
);

const normalized = (name: string) => name.toLowerCase().replace(/[-_]/g, '');

/** True when a query parameter carries a credential (by its name or by its value). */
export function isCredentialParam(name: string, value: string): boolean {
  return CREDENTIAL_NAME.test(normalized(name)) || CREDENTIAL_VALUE.test(value);
}

/**
 * Whether `text` may hold anything redactText replaces: every pattern below in one case-insensitive
 * alternation, so a text that matches none of them (a request URL, nearly always) is scanned once
 * rather than eight times. Case-insensitive finds a superset of what the patterns find.
 */
const MAY_HOLD_SECRET = new RegExp(
  [URL_USERINFO, BEARER, JWT, WORKSPACE_KEY, WEBHOOK_SECRET, NAMED_SECRET, SERVICE_KEY, EMAIL]
    .map((r) => `(?:${r.source})`)
    .join('|'),
  'i',
);

/** `text` with credentials and e-mail addresses replaced: for error messages and stacks on log lines. */
export function redactText(text: string): string {
  if (!MAY_HOLD_SECRET.test(text)) return text;
  return text
    .replace(URL_USERINFO, '$1[redacted]@')
    .replace(BEARER, '$1 [redacted]')
    .replace(JWT, '[redacted-jwt]')
    .replace(WORKSPACE_KEY, 'ws_live_$1[redacted]')
    .replace(WEBHOOK_SECRET, 'whsec_[redacted]')
    .replace(NAMED_SECRET, '$1[redacted]')
    .replace(SERVICE_KEY, '[redacted]')
    .replace(EMAIL, '[email]');
}

/**
 * A request URL as it may be logged: the value of every query parameter that carries a credential
 * (or is an OAuth redirect's code or state) is `[redacted]`, and the rest passes through redactText.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return redactText(url);
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      const name = safeDecode(pair.slice(0, eq));
      const value = safeDecode(pair.slice(eq + 1));
      return isCredentialParam(name, value) || OAUTH_REDIRECT_PARAM.test(normalized(name))
        ? `${pair.slice(0, eq)}=[redacted]`
        : pair;
    })
    .join('&');
  return redactText(`${url.slice(0, q)}?${query}`);
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}
