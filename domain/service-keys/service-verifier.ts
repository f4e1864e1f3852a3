/** How an internal service checks the keys its callers present, and where it logs about its keys. */
import type pg from 'pg';
import type { Config } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import { ServiceKeyVerifier } from './verifier.js';

/** The log of a service's key handling (its verifier, the keys it holds): `service-keys`, at the service's level. */
export function serviceKeysLog(cfg: Pick<Config, 'LOG_LEVEL'>) {
  return createLogger({ name: 'service-keys', level: cfg.LOG_LEVEL });
}

/** The started verifier of the keys presented to `target` (the service's name in the key pairs). */
export function startServiceKeyVerifier(target: string, pool: pg.Pool, cfg: Config): Promise<ServiceKeyVerifier> {
  return ServiceKeyVerifier.forService(target, pool, cfg, serviceKeysLog(cfg));
}
