import type { Queryable } from '../db/db.ts';
import type { LimitObject } from '../errors.ts';
import { preparedQuery } from '../db/prepared-query.ts';
import { appendExecutionEvent, appendSessionEvent } from '../events/store.ts';

/** The statuses an execution can end in; `ended_at` is set exactly for these (a CHECK enforces it). */
export type TerminalStatus = 'succeeded' | 'failed' | 'cancelled';

/** NOTIFY channel on which a cancel announces the execution's id, for the runner working on it. */
export const EXECUTION_CANCELLED_CHANNEL = 'ws_execution_cancelled';

/**
 * Announces at commit that `executionId` was cancelled, so the runner holding it stops its code at
 * once (runner/engine/cancel-listener.ts) rather than at its next lease renewal.
 */
export async function announceCancel(tx: Queryable, executionId: string): Promise<void> {
  await preparedQuery(
    tx,
    'ws_execution_cancel_notify',
    `SELECT pg_notify('${EXECUTION_CANCELLED_CHANNEL}', $1::text)`,
    [executionId],
  );
}

/** An execution's error as stored and returned (docs/executions.md, "The execution record"): `limit` only for limit_exceeded. */
export interface ExecutionError {
  code: string;
  message: string;
  limit?: LimitObject;
}

/**
 * Who may end the execution: `'unended'` ends it whoever holds it (cancel, the control plane);
 * `{ leaseOwner }` only while that runner still holds its lease, so a runner that lost the
 * execution to another one (or to a cancel) cannot end it a second time.
 */
type EndGuard = 'unended' | { leaseOwner: string };

export interface EndExecution {
  executionId: string;
  status: TerminalStatus;
  output?: unknown;
  error?: ExecutionError | null;
  guard: EndGuard;
}

interface EndedRow {
  session_id: string;
  duration_ms: number;
}

/**
 * Ends an execution in the caller's transaction: status, output/error and `ended_at` in one
 * UPDATE — which is also what frees its `workflow.running_executions_per_org` slot (the quota
 * counts `ended_at IS NULL`), so no path can end an execution and leak the slot — the lease
 * cleared, then `execution.finished` appended to both the execution's and the session's events.
 * Returns false, changing nothing, when the execution already ended or the guard does not hold.
 */
export async function endExecution(tx: Queryable, end: EndExecution): Promise<boolean> {
  const leaseOwner = end.guard === 'unended' ? null : end.guard.leaseOwner;
  const { rows } = await preparedQuery<EndedRow>(
    tx,
    'ws_execution_end',
    `UPDATE executions
        SET status = $2, output = $3::jsonb, error = $4::jsonb, ended_at = now(),
            lease_owner = NULL, lease_until = NULL, wake_at = NULL
      WHERE id = $1::uuid AND ended_at IS NULL
        AND ($5::uuid IS NULL OR lease_owner = $5::uuid)
      RETURNING session_id,
        round(extract(epoch FROM now() - coalesce(started_at, created_at)) * 1000)::int AS duration_ms`,
    [end.executionId, end.status, toJson(end.output), toJson(end.error), leaseOwner],
  );
  const row = rows[0];
  if (!row) return false;
  await appendExecutionEvent(tx, {
    executionId: end.executionId,
    sessionId: row.session_id,
    kind: 'execution.finished',
    attributes: { status: end.status, duration_ms: row.duration_ms },
  });
  await appendSessionEvent(tx, {
    sessionId: row.session_id,
    executionId: end.executionId,
    kind: 'execution.finished',
    attributes: { execution_id: end.executionId, status: end.status },
  });
  return true;
}

// undefined and null both store SQL NULL: an execution without output has `output: null`.
function toJson(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}
