/**
 * The runner's guarded writes to an execution it holds. Every statement here changes the row only
 * `WHERE lease_owner = <this runner> AND status = 'running'`: a runner that lost the execution (a
 * cancel ended it, or its lease expired and another runner took it over) changes nothing, learns
 * so from the row count, and stops working on it. Each write also pushes the lease forward.
 *
 * A node's events are inserted by the same statement that records its outcome, so the log never
 * shows a node run the state does not, nor the reverse.
 */
import type { Queryable, Tx } from '../../shared/db/db.ts';
import { EVENTS_CHANNEL, preparedQuery } from '../../shared/events/store.ts';
import type { JobQueue } from '../../shared/queue/execution-jobs.ts';
import { enqueueExecution } from '../../shared/queue/execution-jobs.ts';

/** An execution event to append (contract §9 kinds). */
export interface NewExecutionEvent {
  kind: string;
  node?: string | null;
  attributes?: Record<string, unknown>;
}

/** The interpreter's durable position: the next node to run (null: the execution is done) and its input. */
export interface ExecutionState {
  node: string | null;
  input: unknown;
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
  return JSON.stringify(events.map((event) => ({ kind: event.kind, node: event.node ?? null, attributes: event.attributes ?? {} })));
}

/**
 * Counts a node run as started and appends `node.started`, unless a run ceiling forbids it: the
 * run that would pass `workflow.processor_runs_per_execution` does not start, nor does any run
 * once `workflow.execution_seconds` has passed (both read from the row, with the database clock).
 * Returns the new run count, or null when nothing was written (see `whyNotStarted`).
 */
export async function startNode(q: Queryable, holder: Holder, node: string, processor: string): Promise<number | null> {
  const { rows } = await preparedQuery<{ node_runs: number }>(q, 'ws_node_start',
    `WITH src AS (
       UPDATE executions SET node_runs = node_runs + 1, lease_until = now() + make_interval(secs => $3::int)
        WHERE id = $1::uuid AND lease_owner = $2::uuid AND status = 'running'
          AND node_runs < (limits->>'workflow.processor_runs_per_execution')::int
          AND now() <= deadline_at
        RETURNING session_id, node_runs),
     ${INSERT_EVENTS('src', '$1', '$4', '$5')}
     SELECT src.node_runs, notified.n FROM src, notified`,
    [holder.executionId, holder.runnerId, holder.leaseSeconds, eventsJson([{ kind: 'node.started', node, attributes: { processor } }]), EVENTS_CHANNEL],
  );
  return rows[0]?.node_runs ?? null;
}

/** Why `startNode` wrote nothing: the execution is no longer ours, or which run ceiling holds it back. */
export type NotStarted = 'lost' | 'processor_runs' | 'deadline';

/** Reads why a node run did not start (the rare path, so a second statement). */
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

/**
 * Records a finished node run: the next state and the node's events, in one statement. A
 * completed node run is progress, so the count of crash recoveries starts again from zero.
 * Returns false when the execution is no longer ours.
 */
export async function advanceState(q: Queryable, holder: Holder, state: ExecutionState, events: readonly NewExecutionEvent[]): Promise<boolean> {
  const { rows } = await preparedQuery(q, 'ws_node_advance',
    `WITH src AS (
       UPDATE executions SET state = $3::jsonb, attempts = 0, lease_until = now() + make_interval(secs => $4::int)
        WHERE id = $1::uuid AND lease_owner = $2::uuid AND status = 'running'
        RETURNING session_id),
     ${INSERT_EVENTS('src', '$1', '$5', '$6')}
     SELECT notified.n FROM src, notified`,
    [holder.executionId, holder.runnerId, JSON.stringify(state), holder.leaseSeconds, eventsJson(events), EVENTS_CHANNEL],
  );
  return rows.length > 0;
}

/** What `advanceAndStart` did: nothing (the execution is no longer ours), or advanced and maybe started. */
export type Advanced = { owned: false } | { owned: true; runs: number | null };

/**
 * `advanceState` and `startNode` of the next node in one statement, for the usual step where a
 * node's outcome leads straight to another node: the next state, the finished node's events and,
 * unless a run ceiling forbids it (same conditions as `startNode`), the next run counted with its
 * `node.started`. `runs` is null when the state advanced but the next node did not start
 * (`whyNotStarted` tells which ceiling).
 */
export async function advanceAndStart(q: Queryable, holder: Holder, state: ExecutionState & { node: string }, processor: string, events: readonly NewExecutionEvent[]): Promise<Advanced> {
  const all = [...events, { kind: 'node.started', node: state.node, attributes: { processor } }];
  const { rows } = await preparedQuery<{ node_runs: number; started: boolean }>(q, 'ws_node_advance_start',
    `WITH cur AS (
       SELECT id, node_runs < (limits->>'workflow.processor_runs_per_execution')::int AND now() <= deadline_at AS ok
         FROM executions
        WHERE id = $1::uuid AND lease_owner = $2::uuid AND status = 'running'
        FOR UPDATE),
     src AS (
       UPDATE executions e
          SET state = $3::jsonb, attempts = 0, lease_until = now() + make_interval(secs => $4::int),
              node_runs = e.node_runs + CASE WHEN cur.ok THEN 1 ELSE 0 END
         FROM cur
        WHERE e.id = cur.id
        RETURNING e.session_id, e.node_runs, cur.ok AS started),
     ins AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       SELECT $1::uuid, src.session_id, x.ev->>'kind', x.ev->>'node', coalesce(x.ev->'attributes', '{}'::jsonb)
         FROM src CROSS JOIN jsonb_array_elements($5::jsonb) WITH ORDINALITY AS x(ev, ord)
        -- The last event is the next node's node.started: only when that run starts.
        WHERE src.started OR x.ord < jsonb_array_length($5::jsonb)
        ORDER BY x.ord
       RETURNING id, execution_id),
     notified AS (SELECT count(pg_notify($6, 'execution:' || execution_id || ':' || id)) AS n FROM ins)
     SELECT src.node_runs, src.started, notified.n FROM src, notified`,
    [holder.executionId, holder.runnerId, JSON.stringify(state), holder.leaseSeconds, eventsJson(all), EVENTS_CHANNEL],
  );
  const row = rows[0];
  if (!row) return { owned: false };
  return { owned: true, runs: row.started ? row.node_runs : null };
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
  const { rows } = await preparedQuery<HeldRow>(tx, 'ws_lock_held',
    `SELECT session_id, deadline_at, extract(epoch FROM deadline_at - now())::float8 AS seconds_left
       FROM executions WHERE id = $1::uuid AND lease_owner = $2::uuid AND status = 'running' FOR UPDATE`,
    [holder.executionId, holder.runnerId],
  );
  return rows[0];
}

/** Appends events in the caller's transaction (for the paths that also end or park the execution). */
export async function appendEvents(tx: Tx, executionId: string, sessionId: string, events: readonly NewExecutionEvent[]): Promise<void> {
  if (events.length === 0) return;
  await preparedQuery(tx, 'ws_execution_events_append',
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
export async function park(tx: Tx, queue: JobQueue, holder: Holder, state: ExecutionState, seconds: number): Promise<Date | null> {
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
