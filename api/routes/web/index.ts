/**
 * The workspace portal (web/, a single-page app) served by the account API at `/app/`: the built
 * files of web/dist (`npm run web:build`; a 503 problem until then), hashed assets cached for a
 * year, and every other /app/… path answered with index.html (the app routes in the browser:
 * /app/w/<slug>/keys, …).
 * Every answer carries a strict Content-Security-Policy: only this origin's scripts, styles and
 * API; no inline script, no framing.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../../../lib/errors.js';

export const WEB_DIST = fileURLToPath(new URL('../../../web/dist/', import.meta.url));
export const PORTAL_PATH = '/app/';

export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export default async function webRoutes(app: FastifyInstance) {
  // this plugin's routes only (it is not wrapped in fastify-plugin)
  app.addHook('onRequest', async (_req, reply) => {
    reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
  });
  // reply.sendFile only (`serve: false`): the one route below answers every /app/… path, so a
  // rebuild while the API runs is served at once
  await app.register(fastifyStatic, { root: WEB_DIST, serve: false });
  const page = async (req: FastifyRequest<{ Params: { '*'?: string } }>, reply: FastifyReply) => {
    if (!existsSync(`${WEB_DIST}index.html`))
      throw new AppError('UNAVAILABLE', 'The portal is not built: run `npm run web:build`.');
    const file = req.params['*'] ?? '';
    // a built asset (content-hashed name: cached for good)
    if (file.startsWith('assets/') && !file.includes('..') && existsSync(join(WEB_DIST, file))) {
      reply.header('cache-control', 'public, max-age=31536000, immutable');
      return reply.sendFile(file, WEB_DIST, { cacheControl: false });
    }
    return reply.header('cache-control', 'no-cache').sendFile('index.html', WEB_DIST, { cacheControl: false });
  };
  const hidden = { schema: { hide: true } };
  app.get('/app', hidden, (_req, reply) => reply.redirect(PORTAL_PATH));
  app.get(PORTAL_PATH, hidden, page);
  app.get(`${PORTAL_PATH}*`, hidden, page);
}
