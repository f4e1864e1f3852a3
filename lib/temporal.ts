import {
  Client,
  Connection,
  ScheduleNotFoundError,
  isGrpcServiceError,
  type ScheduleDescription,
} from '@temporalio/client';
import { OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { Config } from './config.js';
import { activeTracing } from './tracing.js';

export async function connectTemporal(cfg: Pick<Config, 'TEMPORAL_ADDRESS' | 'TEMPORAL_NAMESPACE'>): Promise<Client> {
  const connection = await Connection.connect({ address: cfg.TEMPORAL_ADDRESS });
  // Connecting runs the connection's AsyncLocalStorage (for its deadline), which leaves Node's async
  // hooks on for the life of the process: a cost on every promise and socket of every request. We
  // set no deadline, metadata or abort signal through it, so turn it off again; withDeadline() and
  // its kind would turn it back on for their call.
  connection.callContextStorage.disable();
  // while tracing is on, a start, signal or update carries the caller's trace to the workflow
  const interceptors = activeTracing() ? { workflow: [new OpenTelemetryWorkflowClientInterceptor()] } : undefined;
  return new Client({ connection, namespace: cfg.TEMPORAL_NAMESPACE, interceptors });
}

/** Link to a workflow in the Temporal Web UI. */
export function temporalUiLink(
  cfg: Pick<Config, 'TEMPORAL_UI_URL' | 'TEMPORAL_NAMESPACE'>,
  workflowId: string,
): string {
  return `${cfg.TEMPORAL_UI_URL}/namespaces/${encodeURIComponent(cfg.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
}

/** gRPC's status codes 1, 4 and 9 (grpc/status.proto). */
const GRPC_CANCELLED = 1;
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_FAILED_PRECONDITION = 9;

const grpcCodeOf = (err: unknown) => {
  const cause = (err as { cause?: unknown }).cause;
  return isGrpcServiceError(cause) ? cause.code : undefined;
};

/**
 * A call that ran out of the time `connection.withDeadline` gave it: DEADLINE_EXCEEDED, or CANCELLED
 * for one made after that deadline had passed.
 */
export function ranOutOfTime(err: unknown): boolean {
  const code = isGrpcServiceError(err) ? err.code : grpcCodeOf(err);
  return code === GRPC_DEADLINE_EXCEEDED || code === GRPC_CANCELLED;
}

/**
 * A schedule's description, or undefined when it does not exist. A schedule deleted while it is
 * described is absent too: Temporal then answers FAILED_PRECONDITION ("Workflow execution closed
 * before WorkflowTaskStarted event") instead of NOT_FOUND, because its workflow closed between the
 * server's two reads, or its query of the closing workflow runs into the server's deadline
 * (DEADLINE_EXCEEDED): asked once more, it says NOT_FOUND (a schedule that is there is described).
 */
export async function describeScheduleIfPresent(
  client: Client,
  scheduleId: string,
  retryAfterDeadline = true,
): Promise<ScheduleDescription | undefined> {
  try {
    return await client.schedule.getHandle(scheduleId).describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError) return undefined;
    const code = grpcCodeOf(err);
    if (code === GRPC_FAILED_PRECONDITION) return undefined;
    if (code === GRPC_DEADLINE_EXCEEDED && retryAfterDeadline)
      return describeScheduleIfPresent(client, scheduleId, false);
    throw err;
  }
}
