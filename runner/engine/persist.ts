/**
 * The runner's guarded writes to an execution it holds, for the paths off the per-node hot path
 * (those are batched: step-writes.ts): park, hand back, give up, and the locked reads before a
 * ceiling ends an execution. Every statement here changes the row only `WHERE lease_owner = <this
 * runner> AND status = 'running'`: a runner that lost the execution (a cancel ended it, or its
 * lease expired and another runner took it over) changes nothing, learns so from the row count,
 * and stops working on it.
 */
import type { Queryable, Tx } from '../../shared/db/db.ts';
import { preparedQuery } from '../../shared/db/prepared-query.ts';
import { EVENTS_CHANNEL } from '../../shared/events/store.ts';
import type { JobQueue } from '../../shared/queue/execution-jobs.ts';
import { enqueueExecution } from '../../shared/queue/execution-jobs.ts';

/** An execution event to append (kinds: docs/architecture.md, "Execution events"). */
export interface NewExecutionEvent {
  kind: string;
  node?: string | null;
  attributes?: Record<string, unknown>;
}

/** The interpreter's durable position: the next node to run (null: the execution is done) and its input. */
export interface ExecutionState {
  node: string | null;
  input: unknown;
  /** The attempt of `node` to run next under its retry policy (runner/engine/node-policy.ts); absent: the first. */
  attempt?: number;
}

/** Who holds the execution, and for how long each write extends the lease. */
export interface Holder {
  executionId: string;
  runnerId: string;
  leaseSeconds: number;
}

// One INSERT for a list of events in order, each announced like appendExecutionEvent does
// (NOTIFY is delivered at commit, so subscribers never see an event that rolled back).
const INSERT_EVENTS = (source: string, executionParam: string, eventsParam: string, channelParam: string) => `
  ins AS (
    INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
    SELECT ${executionParam}::uuid, src.session_id, x.ev->>'kind', x.ev->>'node', coalesce(x.ev->'attributes', '{}'::jsonb)
      FROM ${source} src CROSS JOIN jsonb_array_elements(${eventsParam}::jsonb) WITH ORDINALITY AS x(ev, ord)
     ORDER BY x.ord
    RETURNING id, execution_id),
  notified AS (SELECT count(pg_notify(${channelParam}, 'execution:' || execution_id || ':' || id)) AS n FROM ins)`;

function eventsJson(events: readonly NewExecutionEvent[]): string {
  return JSON.stringify(
    events.map((event) => ({ kind: event.kind, node: event.node ?? null, attributes: event.attributes ?? {} })),
  );
}

/** Why a node start (step-writes.ts) wrote nothing: the execution is no longer ours, or which run ceiling holds it back. */
export type NotStarted = 'lost' | 'processor_runs' | 'deadline';

/** Reads why a node run did not start (the rare path, so a statement of its own). */
export async function whyNotStarted(q: Queryable, holder: Holder): Promise<NotStarted> {
  const { rows } = await q.query<{ owned: boolean; runs_spent: boolean }>(
    `SELECT lease_owner IS NOT DISTINCT FROM $2::uuid AND status = 'running' AS owned,
            node_runs >= (limits->>'workflow.processor_runs_per_execution')::int AS runs_spent
       FROM executions WHERE id = $1::uuid`,
    [holder.executionId, holder.runnerId],
  );
  const row = rows[0];
  if (!row?.owned) return 'lost';
  return row.runs_spent ? 'processor_runs' : 'deadline';
}

/** The row of an execution this runner holds, locked for the rest of the transaction. */
export interface HeldRow {
  session_id: string;
  deadline_at: string;
  /** Seconds from the database's now() to the deadline (negative once past). */
  seconds_left: number;
}

/** Locks the execution if this runner still holds it; undefined otherwise. */
export async function lockHeld(tx: Tx, holder: Holder): Promise<HeldRow | undefined> {
  const { rows } = await preparedQuery<HeldRow>(
    tx,
    'ws_lock_held',
    `SELECT session_id, deadline_at, extract(epoch FROM deadline_at - now())::float8 AS seconds_left
       FROM executions WHERE id = $1::uuid AND lease_owner = $2::uuid AND status = 'running' FOR UPDATE`,
    [holder.executionId, holder.runnerId],
  );
  return rows[0];
}

/** Appends events in the caller's transaction (for the paths that also end or park the execution). */
export async function appendEvents(
  tx: Tx,
  executionId: string,
  sessionId: string,
  events: readonly NewExecutionEvent[],
): Promise<void> {
  if (events.length === 0) return;
  await preparedQuery(
    tx,
    'ws_execution_events_append',
    `WITH src AS (SELECT $2::uuid AS session_id),
     ${INSERT_EVENTS('src', '$1', '$3', '$4')}
     SELECT notified.n FROM notified`,
    [executionId, sessionId, eventsJson(events), EVENTS_CHANNEL],
  );
}

/**
 * Parks a held execution for `seconds`: status `sleeping`, the state to resume from, `wake_at`, the
 * lease released, and the delayed wake-up job, all in the caller's transaction. `wake_at` is cut to
 * milliseconds so the job's `startAfter` (a Date) is exactly it: the job is never due before the
 * execution is. Returns `wake_at`.
 */
export async function park(
  tx: Tx,
  queue: JobQueue,
  holder: Holder,
  state: ExecutionState,
  seconds: number,
): Promise<Date | null> {
  const { rows } = await tx.query<{ wake_at: string }>(
    `UPDATE executions
        SET status = 'sleeping', state = $3::jsonb, attempts = 0,
            wake_at = date_trunc('milliseconds', now() + make_interval(secs => $4::int)),
            lease_owner = NULL, lease_until = NULL
      WHERE id = $1::uuid AND lease_owner = $2::uuid AND status = 'running'
      RETURNING wake_at`,
    [holder.executionId, holder.runnerId, JSON.stringify(state), seconds],
  );
  const row = rows[0];
  if (!row) return null;
  const wakeAt = new Date(row.wake_at);
  await enqueueExecution(queue, tx, holder.executionId, { startAfter: wakeAt });
  return wakeAt;
}

/**
 * Hands a held execution back to the queue: status `queued`, lease released (`lease_until` keeps
 * when, for the recovery sweep), and a wake-up job any runner may take, in one transaction. The
 * next claim resumes from the last persisted node; it is not counted as a crash recovery.
 */
export async function handBack(tx: Tx, queue: JobQueue, holder: Holder): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE executions SET status = 'queued', lease_owner = NULL, lease_until = now()
      WHERE id = $1::uuid AND lease_owner = $2::uuid AND status = 'running'`,
    [holder.executionId, holder.runnerId],
  );
  if (!rowCount) return false;
  await enqueueExecution(queue, tx, holder.executionId);
  return true;
}

/**
 * Gives a held execution up after the runner failed on it in a way of its own (a database error
 * mid-node, a bug): handed back like `handBack`, but counted as an attempt, so an execution that
 * makes every runner fail reaches the poison bound instead of cycling forever.
 */
export async function giveUp(tx: Tx, queue: JobQueue, holder: Holder): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE executions SET status = 'queued', lease_owner = NULL, lease_until = now(), attempts = attempts + 1
      WHERE id = $1::uuid AND lease_owner = $2::uuid AND status = 'running'`,
    [holder.executionId, holder.runnerId],
  );
  if (!rowCount) return false;
  await enqueueExecution(queue, tx, holder.executionId);
  return true;
}
