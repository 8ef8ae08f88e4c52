/**
 * Claiming executions: the step that turns a wake-up job into ownership. pg-boss only delivers
 * wake-ups; which runner works on an execution is decided here, by a lease on its row. A claim
 * succeeds only for an unfinished execution that nobody holds (no lease, or an expired one) and
 * that is due (not sleeping past now), so duplicate or stale wake-ups are harmless: they claim
 * nothing and their job completes.
 */
import type { Queryable, Tx } from '../../shared/db/db.ts';
import { preparedQuery } from '../../shared/db/prepared-query.ts';
import { announceExecutionEvents, EVENTS_CHANNEL } from '../../shared/events/store.ts';
import { enqueueExecution, type JobQueue } from '../../shared/queue/execution-jobs.ts';
import { QUEUES } from '../../shared/queue/queues.ts';
import type { WorkflowGraph } from '../../shared/workflow/graph.ts';
import type { RunLimits } from '../../shared/workflow/run-limits.ts';
import type { ExecutionState } from './persist.ts';

/** How the claimed execution got here: its first claim, or a resumption and why. */
type ClaimReason = 'started' | 'woke' | 'recovered' | 'handed_back';

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
  /** The claim also started `state.node` (counted the run, appended `node.started`): run it now. */
  prestarted: boolean;
  /** The W3C traceparent of the span that created it (migration 021), or null: its spans' parent. */
  traceparent: string | null;
}

/**
 * Claims every execution of `ids` that is free and due, for `leaseSeconds`, and appends its
 * `execution.started` (first claim: `started_at` and the deadline are set now) or
 * `execution.resumed {reason}` event, in one statement. A takeover of an expired lease held by
 * another runner counts one more attempt; a hand-back or a sleep does not.
 *
 * With `maxRecoveries` the claim also starts the node the execution resumes at, as a node start
 * would (the run counted, `node.started` appended after the claim's event), saving the runner a
 * statement and the execution a round trip before its first node: only when the interpreter
 * would start it at once — a node to run that the graph has, within the poison bound, the run
 * ceiling (a well-formed number) and the deadline. Otherwise the interpreter decides as before.
 */
export async function claimExecutions(
  q: Queryable,
  runnerId: string,
  ids: readonly string[],
  leaseSeconds: number,
  maxRecoveries: number | null = null,
  options: { announced?: boolean } = {},
): Promise<ClaimedExecution[]> {
  if (ids.length === 0) return [];
  const announced = options.announced === true;
  const { rows } = await preparedQuery<ClaimedExecution>(
    q,
    announced ? 'ws_claim_announced' : 'ws_claim',
    claimSql(announced),
    [ids, runnerId, leaseSeconds, EVENTS_CHANNEL, maxRecoveries],
  );
  return rows;
}

/**
 * The claim statement. `announced`: the ids come from their creates' announcements
 * (EXECUTION_CREATED_CHANNEL), whose wake-up jobs carry the executions' ids as their own; the
 * statement also completes the jobs of the executions it claims, as pg-boss's completion would
 * (a job another runner's fetch holds is completed once that fetch commits). Their wake-up has been
 * answered by this claim, so no runner fetches it afterwards; a claim that fails or claims nothing
 * leaves the job to the queue. In the claim's own transaction: the job is done exactly when the
 * claim is. Every idle runner hears an announcement: the rows another runner is claiming (or anything
 * else holds locked) are skipped rather than waited for, and their jobs left to the queue.
 */
function claimSql(announced: boolean): string {
  const completeJobs = announced
    ? `
     answered AS (
       UPDATE pgboss.job j SET state = 'completed', completed_on = now()
         FROM claimed c
        WHERE j.name = '${QUEUES.executions.name}' AND j.id = c.id AND j.state < 'completed'),`
    : '';
  return `WITH prev AS (
       SELECT id, status, started_at, lease_owner, attempts_now, deadline_now, processor,
              $5::int IS NOT NULL AND processor IS NOT NULL AND attempts_now <= $5::int
                AND jsonb_typeof(limits->'workflow.processor_runs_per_execution') = 'number'
                AND node_runs < (limits->>'workflow.processor_runs_per_execution')::numeric
                AND deadline_now IS NOT NULL AND now() <= deadline_now AS prestart
         FROM (
           SELECT e.id, e.status, e.started_at, e.lease_owner, e.limits, e.node_runs,
                  e.attempts + CASE WHEN e.lease_owner IS NOT NULL AND e.lease_owner <> $2::uuid THEN 1 ELSE 0 END AS attempts_now,
                  -- Guarded cast: one malformed row must not fail the claim of its whole batch.
                  coalesce(e.deadline_at, CASE WHEN jsonb_typeof(e.limits->'workflow.execution_seconds') = 'number'
                    THEN now() + make_interval(secs => (e.limits->>'workflow.execution_seconds')::float8) END) AS deadline_now,
                  CASE WHEN jsonb_typeof(e.graph->'nodes'->(e.state->>'node')) = 'object'
                    THEN e.graph->'nodes'->(e.state->>'node')->>'processor' END AS processor
             FROM executions e
            WHERE e.id = ANY($1::uuid[]) AND e.ended_at IS NULL
              AND (e.lease_until IS NULL OR e.lease_until < now())
              AND (e.wake_at IS NULL OR e.wake_at <= now())
            ORDER BY e.id
              FOR UPDATE OF e${announced ? ' SKIP LOCKED' : ''}) AS locked),
     claimed AS (
       UPDATE executions e
          SET status = 'running',
              started_at = coalesce(e.started_at, now()),
              deadline_at = prev.deadline_now,
              lease_owner = $2::uuid,
              lease_until = now() + make_interval(secs => $3::int),
              attempts = prev.attempts_now,
              node_runs = e.node_runs + CASE WHEN prev.prestart THEN 1 ELSE 0 END,
              wake_at = NULL
         FROM prev
        WHERE e.id = prev.id
        RETURNING e.id, e.session_id, e.org_id, e.blob_id, e.revision_id, e.graph, e.limits, e.state, e.node_runs, e.attempts, e.traceparent,
                  CASE WHEN prev.started_at IS NULL THEN 'started'
                       WHEN prev.status = 'sleeping' THEN 'woke'
                       WHEN prev.lease_owner IS NOT NULL THEN 'recovered'
                       ELSE 'handed_back' END AS reason,
                  prev.prestart AS prestarted, prev.processor),
     ins AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       SELECT c.id, c.session_id, x.kind, x.node, x.attributes
         FROM claimed c CROSS JOIN LATERAL (
                SELECT CASE WHEN c.reason = 'started' THEN 'execution.started' ELSE 'execution.resumed' END AS kind,
                       NULL::text AS node,
                       CASE WHEN c.reason = 'started' THEN '{}'::jsonb
                            WHEN c.reason = 'recovered' THEN jsonb_build_object('reason', c.reason, 'attempts', c.attempts)
                            ELSE jsonb_build_object('reason', c.reason) END AS attributes,
                       1 AS ord
                UNION ALL
                SELECT 'node.started', c.state->>'node', jsonb_build_object('processor', c.processor), 2
                 WHERE c.prestarted) AS x
        ORDER BY c.id, x.ord
       RETURNING id, kind, at, session_id, execution_id, node, attributes),${completeJobs}
     ${announceExecutionEvents('notified', 'ins', '$4')}
     SELECT claimed.id, claimed.session_id, claimed.org_id, claimed.blob_id, claimed.revision_id, claimed.graph, claimed.limits,
            claimed.state, claimed.node_runs, claimed.attempts, claimed.reason, claimed.prestarted, claimed.traceparent
       FROM claimed, notified`;
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
