/**
 * Each test process: the Temporal SDK logs only warnings and errors, so test output stays readable.
 * "Activity failed" warnings are left out: the failure-path tests make activities fail hundreds of
 * times on purpose, and what a failure did is asserted from the workflow's status, not read here.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';

try {
  Runtime.install({
    logger: new DefaultLogger('WARN', ({ level, message, meta }) => {
      if (message === 'Activity failed') return;
      console.error(`[temporal ${level}] ${message}`, meta ?? '');
    }),
  });
} catch {
  /* already installed in this process */
}
