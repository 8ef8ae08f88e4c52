/**
 * A node's own run policy at run time (shared/workflow/node-policy.ts; docs/workflow.md, "Retries
 * and timeouts"): the timeout that stops one run, and the durable wait before the next attempt.
 * A retry wait parks the execution exactly like `logic.sleep` (status `sleeping`, lease released,
 * a delayed wake-up job), so it holds no runner slot, survives restarts and counts toward
 * `workflow.execution_seconds`; the attempt to run next is kept in the execution's state.
 */
import type { JobQueue } from '../../shared/queue/execution-jobs.ts';
import type { GraphNode } from '../../shared/workflow/graph.ts';
import {
  NODE_TIMEOUT,
  retrySchema,
  retryable,
  retryWaitSeconds,
  timeoutSchema,
  type RetryPolicy,
} from '../../shared/workflow/node-policy.ts';
import type { NodeError, NodeResult } from '../processors/processor.ts';
import type { Db } from '../../shared/db/db.ts';
import { appendEvents, lockHeld, park, type ExecutionState, type Holder, type NewExecutionEvent } from './persist.ts';

/** The node's retry policy, or null when it has none (or a stored one no longer parses). */
export function retryPolicyOf(node: GraphNode): RetryPolicy | null {
  if (node.retry === undefined) return null;
  const parsed = retrySchema.safeParse(node.retry);
  return parsed.success ? parsed.data : null;
}

/** The node's `timeout_seconds`, or null. */
function timeoutOf(node: GraphNode): number | null {
  if (node.timeout_seconds === undefined) return null;
  const parsed = timeoutSchema.safeParse(node.timeout_seconds);
  return parsed.success ? parsed.data : null;
}

/**
 * Runs `run` under the node's `timeout_seconds`, if it has one: past it the run's signal is
 * aborted (a `logic.code` isolate is stopped and freed at once) and the attempt fails with
 * `node_timeout`. A processor that ignores the signal (a write already in the database) may
 * still complete its write; its result is then not used (at-least-once, as after a crash).
 */
export async function withNodeTimeout(
  name: string,
  node: GraphNode,
  signal: AbortSignal,
  run: (signal: AbortSignal) => Promise<NodeResult>,
): Promise<NodeResult> {
  const seconds = timeoutOf(node);
  if (seconds === null) return run(signal);
  const timer = new AbortController();
  const handle = setTimeout(() => timer.abort(), seconds * 1000);
  try {
    const timedOut = new Promise<null>((resolve) => {
      timer.signal.addEventListener('abort', () => resolve(null), { once: true });
    });
    const result = await Promise.race([run(AbortSignal.any([signal, timer.signal])), timedOut]);
    if (result !== null && !timer.signal.aborted) return result;
    return {
      kind: 'failure',
      error: {
        code: NODE_TIMEOUT,
        message: `Node "${name}" ran past its timeout_seconds (${seconds} s) and was stopped.`,
      },
    };
  } finally {
    clearTimeout(handle);
  }
}

/** A failed attempt that its policy retries: the wait before the next one. */
export interface PlannedRetry {
  policy: RetryPolicy;
  /** The attempt that failed (1 for the first run). */
  attempt: number;
  waitSeconds: number;
}

/** The retry a failure of `node` calls for, or null when it takes its `failure` route now. */
export function plannedRetry(node: GraphNode, state: ExecutionState, error: NodeError): PlannedRetry | null {
  const policy = retryPolicyOf(node);
  if (policy === null) return null;
  const attempt = state.attempt ?? 1;
  if (attempt >= policy.max_attempts || !retryable(error, policy)) return null;
  return { policy, attempt, waitSeconds: retryWaitSeconds(policy, attempt) };
}

/**
 * Parks the execution until the next attempt of node `name`: `node.failed` (with its attempt)
 * and `node.retrying` (`attempt` to run next, `max_attempts`, `wait_seconds`, `wake_at`) are
 * appended, and the state keeps the node, its input and the next attempt. Returns `wake_at`;
 * 'lost' when this runner no longer holds the execution; 'past_deadline' (nothing written) when
 * the wait would end past the execution's deadline: the failure then stands.
 */
export async function parkForRetry(
  db: Db,
  queue: JobQueue,
  holder: Holder,
  name: string,
  state: ExecutionState,
  failed: NewExecutionEvent,
  retry: PlannedRetry,
): Promise<Date | 'lost' | 'past_deadline'> {
  return db.transaction(async (tx) => {
    const row = await lockHeld(tx, holder);
    if (!row) return 'lost';
    if (retry.waitSeconds > row.seconds_left) return 'past_deadline';
    const next: ExecutionState = { node: name, input: state.input, attempt: retry.attempt + 1 };
    const wakeAt = await park(tx, queue, holder, next, retry.waitSeconds);
    if (!wakeAt) return 'lost';
    await appendEvents(tx, holder.executionId, row.session_id, [
      failed,
      {
        kind: 'node.retrying',
        node: name,
        attributes: {
          attempt: retry.attempt + 1,
          max_attempts: retry.policy.max_attempts,
          wait_seconds: retry.waitSeconds,
          wake_at: wakeAt.toISOString(),
        },
      },
    ]);
    return wakeAt;
  });
}
