/**
 * The service keys tests send as the platform's consumers would. Global setup bootstraps them
 * once per run (domain/service-keys/bootstrap.ts: generated, registered `current` at the target,
 * stored in the secret store) and provides the current ones here; the services under test read the
 * registry and the secret store themselves. Nothing in configuration holds a key.
 */
import { inject } from 'vitest';

export const testKeys = {
  /** operator → account-api (the ops routes) */
  get operator() {
    return inject('serviceKeys').operator;
  },
  /** provisioning → account-api (POST /api/webhooks/provisioned) */
  get provisioning() {
    return inject('serviceKeys').provisioning;
  },
  /** worker → events */
  get events() {
    return inject('serviceKeys').events;
  },
  /** worker → notifications */
  get notifications() {
    return inject('serviceKeys').notifications;
  },
};
