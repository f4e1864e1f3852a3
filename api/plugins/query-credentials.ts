/**
 * The account API takes no credential in a query string: a URL ends up in logs, browser history,
 * Referer headers and proxies. A request whose query has a parameter named like a credential
 * (`api_key`, `access_token`, `token`, `password`, …) or a value shaped like one (a `ws_live_`
 * key, a `whsec_` secret, a JWT, `Bearer …`; lib/redact.ts) gets a 400 problem naming the
 * parameter (never its value) and the header to use instead, before any authentication.
 *
 * The one exception is an OAuth 2.0 redirect (the OIDC callback), whose `code` and `state` the
 * identity provider puts in the query by protocol: that route declares
 * `config: { queryCredentials: 'oauth-redirect' }`. The portal's e-mailed links carry their token in
 * the fragment (`#token=…`), which browsers never send.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { sendProblem } from '../../lib/http.js';
import { isCredentialParam } from '../../lib/redact.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 'oauth-redirect': the query carries an OAuth redirect's one-time values (see api/plugins/query-credentials.ts). */
    queryCredentials?: 'oauth-redirect';
  }
}

/** The first query parameter of `req` that carries a credential, by name or value. */
function credentialParam(req: FastifyRequest): string | undefined {
  const query = req.query as Record<string, unknown> | undefined;
  for (const [name, value] of Object.entries(query ?? {})) {
    for (const v of [value].flat()) if (isCredentialParam(name, typeof v === 'string' ? v : '')) return name;
  }
  return undefined;
}

export const queryCredentials = fp(
  async (app: FastifyInstance) => {
    app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
      if (!req.url.includes('?') || req.routeOptions.config?.queryCredentials === 'oauth-redirect') return done();
      const name = credentialParam(req);
      if (name === undefined) return done();
      const field = `query.${name.slice(0, 50)}`;
      const message =
        'is a credential, which this API does not take in a URL (URLs are logged and kept in histories): send a workspace key or an access token as `Authorization: Bearer …`, a service key as `X-API-Key`';
      void sendProblem(reply, 'BAD_REQUEST', `The query parameter "${name.slice(0, 50)}" ${message}.`, {
        errors: [{ field, message }],
      });
    });
  },
  { name: 'query-credentials' },
);
