/** The interactive-login area: cookies (for the refresh token and the OIDC state) and its routes. */
import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import sessionRoutes from './sessions.js';
import oidcRoutes from './oidc.js';
import passwordRoutes from './password.js';

export default async function authRoutes(app: FastifyInstance) {
  await app.register(cookie);
  await app.register(sessionRoutes);
  await app.register(oidcRoutes);
  await app.register(passwordRoutes);
}
