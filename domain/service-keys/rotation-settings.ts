/** A rotation's timings (workflows/rotate-service-key.ts) as the configuration sets them. */
import type { Config } from '../../lib/config.js';
import type { RotationSettings } from './workflow-contract.js';

export const rotationSettings = (cfg: Config): RotationSettings => ({
  acceptWaitMs: cfg.SERVICE_KEY_ROTATION_ACCEPT_WAIT_MS,
  quietPeriodMs: cfg.SERVICE_KEY_ROTATION_QUIET_MS,
  pollIntervalMs: cfg.SERVICE_KEY_ROTATION_POLL_MS,
  deadlineMs: cfg.SERVICE_KEY_ROTATION_DEADLINE_MS,
  rollbackWaitMs: cfg.SERVICE_KEY_ROTATION_ROLLBACK_WAIT_MS,
  // a holding process reports at most a heartbeat plus a tick (≤ a heartbeat) apart; the target
  // writes it within a usage flush (domain/service-keys/holders.ts)
  holderWindowMs: 2 * cfg.SERVICE_KEY_HOLDER_HEARTBEAT_MS + cfg.SERVICE_KEY_USAGE_FLUSH_MS,
  // a holding process reads the store once a tick (holderOptions: the cache TTL, at least 1 s) and
  // reports a new version at once; the target writes it within a usage flush
  exposureNoticeMs: Math.max(cfg.SERVICE_KEY_SECRET_TTL_MS, 1_000) + cfg.SERVICE_KEY_USAGE_FLUSH_MS,
  exposurePollMs: Math.min(cfg.SERVICE_KEY_ROTATION_POLL_MS, Math.max(cfg.SERVICE_KEY_USAGE_FLUSH_MS, 250)),
});
