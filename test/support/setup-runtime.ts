/** Each test process: the Temporal SDK logs only warnings and errors, so test output stays readable. */
import { DefaultLogger, Runtime } from '@temporalio/worker';

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  /* already installed in this process */
}
