/**
 * What the service-key rotation tests set up around the workflow: a Temporal client on the run's
 * dev server, an in-process worker that runs the rotation activities only, and the rotation's
 * timings shortened through the API's configuration (the workflow gets them as input).
 */
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createRotationActivities, type RotationActivityDeps } from '../../activities/service-key-rotation.js';
import { PgSecretStore } from '../../domain/service-keys/secret-store.js';
import type { Config } from '../../lib/config.js';
import { workflowBundle } from './env.js';
import { workflowSpanSinks } from '../../worker/tracing.js';

export interface TemporalClient {
  client: Client;
  close(): Promise<void>;
}

export interface RotationWorker {
  stop(): Promise<void>;
}

/** A client on the run's Temporal; `close()` closes its connection. */
export async function connectTemporalClient(): Promise<TemporalClient> {
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  return { client: new Client({ connection }), close: () => connection.close() };
}

/** A worker of this process on `taskQueue` with the rotation activities; `stop()` drains it and closes its connection. */
export async function startRotationWorker(taskQueue: string, deps: RotationActivityDeps): Promise<RotationWorker> {
  const connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowBundle: workflowBundle(),
    sinks: workflowSpanSinks(),
    activities: createRotationActivities(deps),
  });
  const running = worker.run();
  return {
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** The rotation activities' dependencies as the worker process builds them, from a test's configuration. */
export function rotationActivityDeps(
  cfg: Config,
  pool: RotationActivityDeps['pool'],
  store: PgSecretStore,
  rest: Pick<RotationActivityDeps, 'starter' | 'eventRules'> = {},
): RotationActivityDeps {
  return { pool, store, secrets: new PgSecretStore(pool, cfg.SECRETS_KEY), eventsUrl: cfg.EVENTS_URL, ...rest };
}

/**
 * The API's rotation settings shortened for a test: the new key is accepted after 300 ms, usage is
 * polled every 250 ms, a roll-back waits 500 ms; the quiet period and the deadline are the test's.
 */
export function shortRotationTimings(t: { quietMs: number; deadlineMs: number }): Record<string, string> {
  return {
    SERVICE_KEY_ROTATION_ACCEPT_WAIT_MS: '300',
    SERVICE_KEY_ROTATION_QUIET_MS: String(t.quietMs),
    SERVICE_KEY_ROTATION_POLL_MS: '250',
    SERVICE_KEY_ROTATION_DEADLINE_MS: String(t.deadlineMs),
    SERVICE_KEY_ROTATION_ROLLBACK_WAIT_MS: '500',
  };
}
