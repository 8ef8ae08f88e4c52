/**
 * The interpreter's per-node writes, each one statement for a whole batch of executions (see
 * batcher.ts): start a node, record a node's outcome (and start the next node), end an execution.
 * Every row is guarded like persist.ts: changed only `WHERE lease_owner = <this runner> AND status =
 * 'running'`, so a runner that lost an execution changes nothing for it and learns so from its
 * result, whatever the rest of its batch does. Rows are found by `id = ANY(…)`, an index scan
 * whatever the batch size (a join on the unnested input let the generic plan scan the whole
 * table), and locked in id order, the order the lease keeper's renewal takes them too, so two of
 * this runner's statements never deadlock.
 *
 * A node's events are inserted by the statement that records its outcome, and an execution's end,
 * its last events and `execution.finished` (in its own log and its session's) are one statement:
 * the log never shows what the state does not, nor the reverse. Each execution with new events is
 * announced once per statement, naming its newest event: the listener reads everything above what
 * it last pushed (control-plane/events/listener.ts), so one NOTIFY per owner is as good as one per event.
 */
import type { Queryable } from '../../shared/db/db.ts';
import { EVENTS_CHANNEL, preparedQuery } from '../../shared/events/store.ts';
import type { ExecutionError, TerminalStatus } from '../../shared/workflow/execution-end.ts';
import { Batcher } from '../../shared/batcher.ts';
import type { ExecutionState, NewExecutionEvent } from './persist.ts';

/**
 * Who writes: this runner, and its lease length. A write pushes `lease_until` forward only once
 * less than half of the lease is left: the lease keeper renews every held lease on its own
 * period, and a write that changes no indexed column is a HOT update (no new index entries),
 * which a lease extension on every node would prevent (`lease_until` is indexed). Under a starved
 * lease keeper, progress still keeps the lease alive.
 */
export interface Writer {
  runnerId: string;
  leaseSeconds: number;
}

// The lease after a write: unchanged while more than half of it is left (see Writer).
const LEASE = (param: string) => `CASE WHEN e.lease_until < now() + make_interval(secs => ${param}::int) / 2
  THEN now() + make_interval(secs => ${param}::int) ELSE e.lease_until END`;

function eventsJson(events: readonly NewExecutionEvent[]): string {
  return JSON.stringify(events.map((event) => ({ kind: event.kind, node: event.node ?? null, attributes: event.attributes ?? {} })));
}

// Whether the row may count one more node run: the run that would pass
// processor_runs_per_execution, or any run past the deadline, never starts.
const MAY_START = `e.node_runs < (e.limits->>'workflow.processor_runs_per_execution')::int AND now() <= e.deadline_at`;

// Ordinal of the event a statement appends after a row's own events.
const LAST = 2147483647;

/**
 * The CTE `ins`: for each row of `source` (columns id, session_id, events), its `events` in order
 * and then what `tail` selects (kind, node, attributes, ordinal; it may select nothing).
 */
function INSERT_EVENTS_THEN(source: string, tail: string): string {
  return `ins AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       SELECT ${source}.id, ${source}.session_id, x.kind, x.node, x.attributes
         FROM ${source} CROSS JOIN LATERAL (
                SELECT ev->>'kind' AS kind, ev->>'node' AS node, coalesce(ev->'attributes', '{}'::jsonb) AS attributes, ord
                  FROM jsonb_array_elements(${source}.events) WITH ORDINALITY AS t(ev, ord)
                UNION ALL
                ${tail}) AS x
        ORDER BY ${source}.id, x.ord
       RETURNING id, execution_id)`;
}

/** One node to start: `node.started` is appended when it does. */
export interface StartItem {
  executionId: string;
  node: string;
  processor: string;
}

/** Per item: the new run count, or null when nothing was written (lost, or a ceiling; see whyNotStarted). */
export async function startNodes(q: Queryable, writer: Writer, items: readonly StartItem[]): Promise<Array<number | null>> {
  const { rows } = await preparedQuery<{ id: string; node_runs: number }>(q, 'ws_nodes_start',
    `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[]) AS i(id, node, processor)),
     cur AS (
       SELECT e.id FROM executions e
        WHERE e.id = ANY($1::uuid[]) AND e.lease_owner = $4::uuid AND e.status = 'running' AND ${MAY_START}
        ORDER BY e.id FOR UPDATE OF e),
     src AS (
       UPDATE executions e SET node_runs = e.node_runs + 1, lease_until = ${LEASE('$6')}
         FROM cur WHERE e.id = cur.id AND e.id = ANY($1::uuid[])
       RETURNING e.id, e.session_id, e.node_runs),
     ins AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       SELECT src.id, src.session_id, 'node.started', input.node, jsonb_build_object('processor', input.processor)
         FROM src JOIN input USING (id)
       RETURNING id, execution_id),
     notified AS (SELECT count(pg_notify($5, 'execution:' || execution_id || ':' || id)) AS n FROM ins)
     SELECT src.id, src.node_runs FROM src, notified`,
    [items.map((i) => i.executionId), items.map((i) => i.node), items.map((i) => i.processor), writer.runnerId, EVENTS_CHANNEL, writer.leaseSeconds],
  );
  const runs = new Map(rows.map((row) => [row.id, row.node_runs]));
  return items.map((item) => runs.get(item.executionId) ?? null);
}

/** A finished node run: the next state, the node's events, and the next node's processor when it is to start now. */
export interface AdvanceItem {
  executionId: string;
  state: ExecutionState;
  events: readonly NewExecutionEvent[];
  /** Start `state.node` in the same statement (null: only record the outcome). */
  startProcessor: string | null;
}

/** What an advance did: nothing (the execution is no longer ours), or advanced, and the next run's count when it started. */
export type Advanced = { owned: false } | { owned: true; runs: number | null };

/**
 * Records each item's outcome (a completed node run is progress: the crash-recovery count starts
 * again from zero) and, where asked and no run ceiling forbids it, counts the next node's run and
 * appends its `node.started` after the finished node's events.
 */
export async function advanceNodes(q: Queryable, writer: Writer, items: readonly AdvanceItem[]): Promise<Advanced[]> {
  const { rows } = await preparedQuery<{ id: string; node_runs: number; started: boolean }>(q, 'ws_nodes_advance',
    `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS i(id, state, events, processor)),
     cur AS (
       SELECT e.id, input.processor IS NOT NULL AND ${MAY_START} AS starts
         FROM executions e JOIN input USING (id)
        WHERE e.id = ANY($1::uuid[]) AND e.lease_owner = $5::uuid AND e.status = 'running'
        ORDER BY e.id FOR UPDATE OF e),
     src AS (
       UPDATE executions e
          SET state = input.state::jsonb, attempts = 0, lease_until = ${LEASE('$7')},
              node_runs = e.node_runs + CASE WHEN cur.starts THEN 1 ELSE 0 END
         FROM cur JOIN input USING (id)
        WHERE e.id = cur.id AND e.id = ANY($1::uuid[])
       RETURNING e.id, e.session_id, e.node_runs, cur.starts AS started, input.events::jsonb AS events,
                 input.state::jsonb->>'node' AS next_node, input.processor),
     ${INSERT_EVENTS_THEN('src', `SELECT 'node.started', src.next_node, jsonb_build_object('processor', src.processor), ${LAST} WHERE src.started`)},
     notified AS (SELECT count(pg_notify($6, 'execution:' || execution_id || ':' || last)) AS n FROM (SELECT execution_id, max(id) AS last FROM ins GROUP BY execution_id) AS g)
     SELECT src.id, src.node_runs, src.started FROM src, notified`,
    [
      items.map((i) => i.executionId),
      items.map((i) => JSON.stringify(i.state)),
      items.map((i) => eventsJson(i.events)),
      items.map((i) => i.startProcessor),
      writer.runnerId,
      EVENTS_CHANNEL,
      writer.leaseSeconds,
    ],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return items.map((item): Advanced => {
    const row = byId.get(item.executionId);
    if (!row) return { owned: false };
    return { owned: true, runs: row.started ? row.node_runs : null };
  });
}

/** An execution to end, with the events of its last node. */
export interface EndItem {
  executionId: string;
  status: TerminalStatus;
  output?: unknown;
  error?: ExecutionError | null;
  events: readonly NewExecutionEvent[];
}

// undefined and null both store SQL NULL: an execution without output has `output: null`.
function toJson(value: unknown): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/**
 * Ends each item's execution if this runner still holds it: status, output/error and `ended_at` in
 * one UPDATE (which frees its `workflow.running_executions_per_org` slot, as endExecution does),
 * the lease cleared, the last node's events, then `execution.finished` in the execution's log and
 * the session's. Per item: whether it ended here.
 */
export async function endExecutions(q: Queryable, writer: Writer, items: readonly EndItem[]): Promise<boolean[]> {
  const { rows } = await preparedQuery<{ id: string }>(q, 'ws_executions_end',
    `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[]) AS i(id, status, output, error, events)),
     cur AS (
       SELECT e.id FROM executions e
        WHERE e.id = ANY($1::uuid[]) AND e.lease_owner = $6::uuid AND e.status = 'running' AND e.ended_at IS NULL
        ORDER BY e.id FOR UPDATE OF e),
     ended AS (
       UPDATE executions e
          SET status = input.status, output = input.output::jsonb, error = input.error::jsonb, ended_at = now(),
              lease_owner = NULL, lease_until = NULL, wake_at = NULL
         FROM cur JOIN input USING (id)
        WHERE e.id = cur.id AND e.id = ANY($1::uuid[])
       RETURNING e.id, e.session_id, input.status, input.events::jsonb AS events,
                 round(extract(epoch FROM now() - coalesce(e.started_at, e.created_at)) * 1000)::int AS duration_ms),
     ${INSERT_EVENTS_THEN('ended', `SELECT 'execution.finished', NULL, jsonb_build_object('status', ended.status, 'duration_ms', ended.duration_ms), ${LAST}`)},
     session_ins AS (
       INSERT INTO session_events (session_id, execution_id, kind, attributes)
       SELECT ended.session_id, ended.id, 'execution.finished', jsonb_build_object('execution_id', ended.id, 'status', ended.status)
         FROM ended ORDER BY ended.id
       RETURNING id, session_id),
     notified AS (SELECT count(pg_notify($7, 'execution:' || execution_id || ':' || last)) AS n FROM (SELECT execution_id, max(id) AS last FROM ins GROUP BY execution_id) AS g),
     session_notified AS (SELECT count(pg_notify($7, 'session:' || session_id || ':' || id)) AS n FROM session_ins)
     SELECT ended.id FROM ended, notified, session_notified`,
    [
      items.map((i) => i.executionId),
      items.map((i) => i.status),
      items.map((i) => toJson(i.output)),
      items.map((i) => toJson(i.error)),
      items.map((i) => eventsJson(i.events)),
      writer.runnerId,
      EVENTS_CHANNEL,
    ],
  );
  const ended = new Set(rows.map((row) => row.id));
  return items.map((item) => ended.has(item.executionId));
}

/** The three writes, each batched across this runner's executions (batcher.ts). */
export interface StepWriter {
  start(item: StartItem): Promise<number | null>;
  advance(item: AdvanceItem): Promise<Advanced>;
  end(item: EndItem): Promise<boolean>;
}

export interface StepWriterOptions {
  /** Most executions per statement. Default 256. */
  maxBatch?: number;
  /**
   * Most statements of each kind in progress at once. Default 1: what arrives meanwhile waits for
   * it and leaves as one batch (measured: bigger batches, fewer statements, same throughput).
   */
  maxInFlight?: number;
}

export function createStepWriter(q: Queryable, writer: Writer, options: StepWriterOptions = {}): StepWriter {
  const sizes = { maxBatch: options.maxBatch ?? 256, maxInFlight: options.maxInFlight ?? 1 };
  const starts = new Batcher<StartItem, number | null>({ ...sizes, flush: (items) => startNodes(q, writer, items) });
  const advances = new Batcher<AdvanceItem, Advanced>({ ...sizes, flush: (items) => advanceNodes(q, writer, items) });
  const ends = new Batcher<EndItem, boolean>({ ...sizes, flush: (items) => endExecutions(q, writer, items) });
  return {
    start: (item) => starts.submit(item),
    advance: (item) => advances.submit(item),
    end: (item) => ends.submit(item),
  };
}
