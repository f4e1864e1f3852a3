/**
 * The routes of an internal service that need its service key (`X-API-Key`), and the key-check
 * route its consumers report the key they hold to (a rotation's switch proof,
 * domain/service-keys/holders.ts).
 */
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import {
  registerServiceKeyCheck,
  requireServiceKey,
  type ServiceKeyCheck,
} from '../domain/service-keys/service-key-auth.js';
import type { ServiceApp } from '../lib/service-app.js';

/** The scope the keyed routes are registered in. */
export type KeyedRoutes = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface KeyedRoutesOptions {
  /** Who may call (default: every registered caller of the target). */
  callers?: readonly string[];
  /** Leave the key-check route out of the OpenAPI document. */
  hideKeyCheck?: boolean;
}

/** Registers the key-check route and, in a scope that requires the service key, the routes `register` adds. */
export async function registerKeyedRoutes(
  app: ServiceApp,
  keys: ServiceKeyCheck,
  opts: KeyedRoutesOptions,
  register: (routes: KeyedRoutes) => void,
): Promise<void> {
  registerServiceKeyCheck(app as unknown as FastifyInstance, keys, opts.hideKeyCheck ? { hide: true } : {});
  await app.register(async (instance) => {
    const routes = instance.withTypeProvider<TypeBoxTypeProvider>();
    routes.addHook('onRequest', requireServiceKey(keys, opts.callers));
    register(routes);
  });
}
