/**
 * Claiming executions: the step that turns a wake-up job into ownership. pg-boss only delivers
 * wake-ups; which runner works on an execution is decided here, by a lease on its row. A claim
 * succeeds only for an unfinished execution that nobody holds (no lease, or an expired one) and
 * that is due (not sleeping past now), so duplicate or stale wake-ups are harmless: they claim
 * nothing and their job completes.
 */
import type { Queryable, Tx } from '../../shared/db/db.ts';
import { EVENTS_CHANNEL, preparedQuery } from '../../shared/events/store.ts';
import { enqueueExecution, type JobQueue } from '../../shared/queue/execution-jobs.ts';
import type { WorkflowGraph } from '../../shared/workflow/graph.ts';
import type { RunLimits } from '../processors/processor.ts';
import type { ExecutionState } from './persist.ts';

/** How the claimed execution got here: its first claim, or a resumption and why. */
export type ClaimReason = 'started' | 'woke' | 'recovered' | 'handed_back';

/** An execution this runner now holds, with everything the interpreter needs. */
export interface ClaimedExecution {
  id: string;
  session_id: string;
  org_id: string;
  blob_id: string;
  revision_id: string;
  graph: WorkflowGraph;
  limits: RunLimits;
  state: ExecutionState;
  node_runs: number;
  /** Takeovers after a holder's lease expired without a completed node run since (crash recoveries). */
  attempts: number;
  reason: ClaimReason;
}

/**
 * Claims every execution of `ids` that is free and due, for `leaseSeconds`, and appends its
 * `execution.started` (first claim: `started_at` and the deadline are set now) or
 * `execution.resumed {reason}` event, in one statement. A takeover of an expired lease held by
 * another runner counts one more attempt; a hand-back or a sleep does not.
 */
export async function claimExecutions(q: Queryable, runnerId: string, ids: readonly string[], leaseSeconds: number): Promise<ClaimedExecution[]> {
  if (ids.length === 0) return [];
  const { rows } = await preparedQuery<ClaimedExecution>(q, 'ws_claim',
    `WITH prev AS (
       SELECT id, status, started_at, lease_owner FROM executions
        WHERE id = ANY($1::uuid[]) AND ended_at IS NULL
          AND (lease_until IS NULL OR lease_until < now())
          AND (wake_at IS NULL OR wake_at <= now())
        FOR UPDATE),
     claimed AS (
       UPDATE executions e
          SET status = 'running',
              started_at = coalesce(e.started_at, now()),
              -- Guarded cast: one malformed row must not fail the claim of its whole batch.
              deadline_at = coalesce(e.deadline_at, CASE WHEN jsonb_typeof(e.limits->'workflow.execution_seconds') = 'number'
                THEN now() + make_interval(secs => (e.limits->>'workflow.execution_seconds')::float8) END),
              lease_owner = $2::uuid,
              lease_until = now() + make_interval(secs => $3::int),
              attempts = e.attempts + CASE WHEN e.lease_owner IS NOT NULL AND e.lease_owner <> $2::uuid THEN 1 ELSE 0 END,
              wake_at = NULL
         FROM prev
        WHERE e.id = prev.id
        RETURNING e.id, e.session_id, e.org_id, e.blob_id, e.revision_id, e.graph, e.limits, e.state, e.node_runs, e.attempts,
                  CASE WHEN prev.started_at IS NULL THEN 'started'
                       WHEN prev.status = 'sleeping' THEN 'woke'
                       WHEN prev.lease_owner IS NOT NULL THEN 'recovered'
                       ELSE 'handed_back' END AS reason),
     ins AS (
       INSERT INTO execution_events (execution_id, session_id, kind, attributes)
       SELECT id, session_id,
              CASE WHEN reason = 'started' THEN 'execution.started' ELSE 'execution.resumed' END,
              CASE WHEN reason = 'started' THEN '{}'::jsonb
                   WHEN reason = 'recovered' THEN jsonb_build_object('reason', reason, 'attempts', attempts)
                   ELSE jsonb_build_object('reason', reason) END
         FROM claimed
       RETURNING id, execution_id),
     notified AS (SELECT count(pg_notify($4, 'execution:' || execution_id || ':' || id)) AS n FROM ins)
     SELECT claimed.* FROM claimed, notified`,
    [ids, runnerId, leaseSeconds, EVENTS_CHANNEL],
  );
  return rows;
}

/**
 * Of `ids` that were not claimed, re-sends the wake-up of every one still sleeping past now: its
 * job came due a moment before its `wake_at` by the database's clock (clocks of pg-boss's
 * statement and the claim differ by microseconds). Anything else unclaimed is held by a live
 * runner, ended, or will be found by the recovery sweep.
 */
export async function rescheduleEarly(tx: Tx, queue: JobQueue, ids: readonly string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const { rows } = await tx.query<{ id: string; wake_at: string }>(
    `SELECT id, wake_at FROM executions
      WHERE id = ANY($1::uuid[]) AND status = 'sleeping' AND ended_at IS NULL AND wake_at > now()`,
    [ids],
  );
  for (const row of rows) await enqueueExecution(queue, tx, row.id, { startAfter: new Date(row.wake_at) });
  return rows.length;
}
