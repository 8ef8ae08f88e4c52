/**
 * The interpreter's per-node writes — start a node, record a node's outcome (and start the next
 * node), end an execution — for a whole batch of executions in one statement (shared/batcher.ts).
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
 * announced once per statement, naming its newest event and carrying the events when they fit
 * (shared/events/store.ts, announceExecutionEvents): the listener pushes them from the payload to a
 * subscriber that has everything before them, and otherwise reads everything above what it last
 * pushed (control-plane/events/listener.ts), so one NOTIFY per owner is as good as one per event.
 */
import type { Queryable } from '../../shared/db/db.ts';
import { preparedQuery } from '../../shared/db/prepared-query.ts';
import { announceExecutionEvents, EVENTS_CHANNEL } from '../../shared/events/store.ts';
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
const LEASE = `CASE WHEN e.lease_until < now() + make_interval(secs => $3::int) / 2
  THEN now() + make_interval(secs => $3::int) ELSE e.lease_until END`;

function eventsJson(events: readonly NewExecutionEvent[]): string {
  return JSON.stringify(
    events.map((event) => ({ kind: event.kind, node: event.node ?? null, attributes: event.attributes ?? {} })),
  );
}

// Whether the row may count one more node run: the run that would pass
// processor_runs_per_execution, or any run past the deadline, never starts.
const MAY_START = `l.node_runs < (l.limits->>'workflow.processor_runs_per_execution')::int AND now() <= l.deadline_at`;

// What the event inserts return: the whole event, which the announcement carries.
const RETURNED = 'id, kind, at, session_id, execution_id, node, attributes';

// Ordinal of the event a statement appends after a row's own events.
const LAST = 2147483647;

/**
 * The CTE `<name>`: for each row of `source` (columns id, session_id, events), its `events` in
 * order and then what `tail` selects (kind, node, attributes, ordinal; it may select nothing).
 */
function insertEventsThen(name: string, source: string, tail: string): string {
  return `${name} AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       SELECT ${source}.id, ${source}.session_id, x.kind, x.node, x.attributes
         FROM ${source} CROSS JOIN LATERAL (
                SELECT ev->>'kind' AS kind, ev->>'node' AS node, coalesce(ev->'attributes', '{}'::jsonb) AS attributes, ord
                  FROM jsonb_array_elements(${source}.events) WITH ORDINALITY AS t(ev, ord)
                UNION ALL
                ${tail}) AS x
        ORDER BY ${source}.id, x.ord
       RETURNING ${RETURNED})`;
}

/** One node to start: `node.started` is appended when it does. */
export interface StartItem {
  executionId: string;
  node: string;
  processor: string;
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

/** Writes of the three kinds for one statement; an execution appears at most once in all. */
export interface StepBatch {
  starts: readonly StartItem[];
  advances: readonly AdvanceItem[];
  ends: readonly EndItem[];
}

/** Per item of each kind, in order: see startNodes, advanceNodes and endExecutions. */
export interface StepResults {
  starts: Array<number | null>;
  advances: Advanced[];
  ends: boolean[];
}

// $1 runner, $2 events channel, $3 lease seconds; starts $4–$6; advances $7–$10; ends $11–$15.
// Rows are found by `id = ANY(...)`, locked together in id order, and guarded by the lease; the
// three kinds touch disjoint executions (an execution has one write in flight at a time).
const STEPS_SQL = `WITH
     -- Every row of the statement, locked once and in id order whatever its kind: the order the
     -- lease keeper's renewal takes them in too, so the two never deadlock.
     locked AS (
       SELECT e.id, e.node_runs, e.limits, e.deadline_at FROM executions e
        WHERE e.id = ANY($4::uuid[] || $7::uuid[] || $11::uuid[]) AND e.lease_owner = $1::uuid AND e.status = 'running'
        ORDER BY e.id FOR UPDATE OF e),

     -- Node starts: count the run and append node.started, unless a ceiling forbids it.
     s_input AS (SELECT * FROM unnest($4::uuid[], $5::text[], $6::text[]) AS i(id, node, processor)),
     s_cur AS (SELECT l.id FROM locked l WHERE l.id = ANY($4::uuid[]) AND ${MAY_START}),
     s_src AS (
       UPDATE executions e SET node_runs = e.node_runs + 1, lease_until = ${LEASE}
         FROM s_cur WHERE e.id = s_cur.id AND e.id = ANY($4::uuid[])
       RETURNING e.id, e.session_id, e.node_runs),
     s_ins AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       SELECT s_src.id, s_src.session_id, 'node.started', s_input.node, jsonb_build_object('processor', s_input.processor)
         FROM s_src JOIN s_input USING (id)
       RETURNING ${RETURNED}),
     ${announceExecutionEvents('s_notified', 's_ins', '$2')},

     -- Node outcomes: the next state and the node's events, and the next node's start when asked
     -- and no ceiling forbids it (node.started after the finished node's events).
     a_input AS (SELECT * FROM unnest($7::uuid[], $8::text[], $9::text[], $10::text[]) AS i(id, state, events, processor)),
     a_cur AS (
       SELECT l.id, a_input.processor IS NOT NULL AND ${MAY_START} AS starts
         FROM locked l JOIN a_input USING (id)),
     a_src AS (
       UPDATE executions e
          SET state = a_input.state::jsonb, attempts = 0, lease_until = ${LEASE},
              node_runs = e.node_runs + CASE WHEN a_cur.starts THEN 1 ELSE 0 END
         FROM a_cur JOIN a_input USING (id)
        WHERE e.id = a_cur.id AND e.id = ANY($7::uuid[])
       RETURNING e.id, e.session_id, e.node_runs, a_cur.starts AS started, a_input.events::jsonb AS events,
                 a_input.state::jsonb->>'node' AS next_node, a_input.processor),
     ${insertEventsThen('a_ins', 'a_src', `SELECT 'node.started', a_src.next_node, jsonb_build_object('processor', a_src.processor), ${LAST} WHERE a_src.started`)},
     ${announceExecutionEvents('a_notified', 'a_ins', '$2')},

     -- Ends: status, output/error, ended_at (which frees the running slot), the lease cleared, the
     -- last node's events, execution.finished in the execution's log and in the session's.
     e_input AS (SELECT * FROM unnest($11::uuid[], $12::text[], $13::text[], $14::text[], $15::text[]) AS i(id, status, output, error, events)),
     e_cur AS (SELECT l.id FROM locked l WHERE l.id = ANY($11::uuid[])),
     e_ended AS (
       UPDATE executions e
          SET status = e_input.status, output = e_input.output::jsonb, error = e_input.error::jsonb, ended_at = now(),
              lease_owner = NULL, lease_until = NULL, wake_at = NULL
         FROM e_cur JOIN e_input USING (id)
        WHERE e.id = e_cur.id AND e.id = ANY($11::uuid[])
       RETURNING e.id, e.session_id, e_input.status, e_input.events::jsonb AS events,
                 round(extract(epoch FROM now() - coalesce(e.started_at, e.created_at)) * 1000)::int AS duration_ms),
     ${insertEventsThen('e_ins', 'e_ended', `SELECT 'execution.finished', NULL, jsonb_build_object('status', e_ended.status, 'duration_ms', e_ended.duration_ms), ${LAST}`)},
     e_session_ins AS (
       INSERT INTO session_events (session_id, execution_id, kind, attributes)
       SELECT e_ended.session_id, e_ended.id, 'execution.finished', jsonb_build_object('execution_id', e_ended.id, 'status', e_ended.status)
         FROM e_ended ORDER BY e_ended.id
       RETURNING id, session_id),
     ${announceExecutionEvents('e_notified', 'e_ins', '$2')},
     e_session_notified AS (SELECT count(pg_notify($2, 'session:' || session_id || ':' || id)) AS n FROM e_session_ins)
   -- The announcements are read here so that they run.
   SELECT r.kind, r.id, r.runs, r.started
     FROM (SELECT 's' AS kind, id, node_runs AS runs, true AS started FROM s_src
           UNION ALL SELECT 'a', id, node_runs, started FROM a_src
           UNION ALL SELECT 'e', id, NULL::int, NULL::boolean FROM e_ended) AS r,
          s_notified, a_notified, e_notified, e_session_notified`;

/**
 * One statement for a batch of node starts, node outcomes and ends (each kind may be empty). A
 * start counts the run and appends `node.started` unless a run ceiling forbids it (then null:
 * whyNotStarted tells which). An outcome records the next state and the node's events (a
 * completed node run is progress: the crash-recovery count starts again from zero) and, when
 * asked and no ceiling forbids it, counts the next node's run and appends its `node.started`. An
 * end writes the status, output/error and `ended_at` (which frees the execution's
 * `workflow.running_executions_per_org` slot, as endExecution does), clears the lease, and appends
 * the last node's events and `execution.finished` to the execution's log and the session's.
 */
export async function writeSteps(q: Queryable, writer: Writer, batch: StepBatch): Promise<StepResults> {
  const { starts, advances, ends } = batch;
  const { rows } = await preparedQuery<{
    kind: 's' | 'a' | 'e';
    id: string;
    runs: number | null;
    started: boolean | null;
  }>(q, 'ws_steps', STEPS_SQL, [
    writer.runnerId,
    EVENTS_CHANNEL,
    writer.leaseSeconds,
    starts.map((i) => i.executionId),
    starts.map((i) => i.node),
    starts.map((i) => i.processor),
    advances.map((i) => i.executionId),
    advances.map((i) => JSON.stringify(i.state)),
    advances.map((i) => eventsJson(i.events)),
    advances.map((i) => i.startProcessor),
    ends.map((i) => i.executionId),
    ends.map((i) => i.status),
    ends.map((i) => toJson(i.output)),
    ends.map((i) => toJson(i.error)),
    ends.map((i) => eventsJson(i.events)),
  ]);
  const started = new Map<string, number>();
  const advanced = new Map<string, { runs: number; started: boolean }>();
  const ended = new Set<string>();
  for (const row of rows) {
    if (row.kind === 's') started.set(row.id, row.runs as number);
    else if (row.kind === 'a') advanced.set(row.id, { runs: row.runs as number, started: row.started === true });
    else ended.add(row.id);
  }
  return {
    starts: starts.map((item) => started.get(item.executionId) ?? null),
    advances: advances.map((item): Advanced => {
      const row = advanced.get(item.executionId);
      if (!row) return { owned: false };
      return { owned: true, runs: row.started ? row.runs : null };
    }),
    ends: ends.map((item) => ended.has(item.executionId)),
  };
}

/** Node starts alone: per item the new run count, or null when nothing was written. */
export async function startNodes(
  q: Queryable,
  writer: Writer,
  items: readonly StartItem[],
): Promise<Array<number | null>> {
  return (await writeSteps(q, writer, { starts: items, advances: [], ends: [] })).starts;
}

/** Node outcomes alone (see writeSteps). */
export async function advanceNodes(q: Queryable, writer: Writer, items: readonly AdvanceItem[]): Promise<Advanced[]> {
  return (await writeSteps(q, writer, { starts: [], advances: items, ends: [] })).advances;
}

/** Ends alone: per item whether it ended here (see writeSteps). */
export async function endExecutions(q: Queryable, writer: Writer, items: readonly EndItem[]): Promise<boolean[]> {
  return (await writeSteps(q, writer, { starts: [], advances: [], ends: items })).ends;
}

/** Times a statement chosen as a deadlock victim is run again before its batch fails. */
const VICTIM_RETRIES = 3;

/**
 * Runs `write` (one statement, so all or nothing) again when PostgreSQL chose it as a deadlock
 * victim or failed it for serialization: a failed batch would give back every execution in it.
 * Every statement that locks executions takes them in id order, so a deadlock is not expected;
 * this keeps a plan that visits rows otherwise (or a hand-written statement) from costing more
 * than a retry.
 */
async function retryingVictims<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (attempt >= VICTIM_RETRIES || (code !== '40P01' && code !== '40001')) throw error;
    }
  }
}

type StepItem =
  { kind: 'start'; item: StartItem } | { kind: 'advance'; item: AdvanceItem } | { kind: 'end'; item: EndItem };
type StepResult = number | null | Advanced | boolean;

/** The per-node writes of one runner, batched across its executions (shared/batcher.ts). */
export interface StepWriter {
  start(item: StartItem): Promise<number | null>;
  advance(item: AdvanceItem): Promise<Advanced>;
  end(item: EndItem): Promise<boolean>;
}

export interface StepWriterOptions {
  /** Most writes per statement. Default 256. */
  maxBatch?: number;
  /**
   * Most statements in progress at once. Default 1: what arrives meanwhile waits for it and leaves
   * as one batch (measured: bigger batches, fewer statements, same throughput).
   */
  maxInFlight?: number;
}

/**
 * Starts, outcomes and ends share one batch and one statement: with one kind per statement a
 * runner sent up to three statements where one does, and each statement costs a round trip, a
 * transaction and wake-ups on both sides.
 */
export function createStepWriter(q: Queryable, writer: Writer, options: StepWriterOptions = {}): StepWriter {
  const batcher = new Batcher<StepItem, StepResult>({
    maxBatch: options.maxBatch ?? 256,
    maxInFlight: options.maxInFlight ?? 1,
    async flush(items) {
      const batch = {
        starts: items.flatMap((step) => (step.kind === 'start' ? [step.item] : [])),
        advances: items.flatMap((step) => (step.kind === 'advance' ? [step.item] : [])),
        ends: items.flatMap((step) => (step.kind === 'end' ? [step.item] : [])),
      };
      const results = await retryingVictims(() => writeSteps(q, writer, batch));
      const next = { start: 0, advance: 0, end: 0 };
      return items.map((step): StepResult => {
        if (step.kind === 'start') return results.starts[next.start++] as number | null;
        if (step.kind === 'advance') return results.advances[next.advance++] as Advanced;
        return results.ends[next.end++] as boolean;
      });
    },
  });
  return {
    start: async (item) => (await batcher.submit({ kind: 'start', item })) as number | null,
    advance: async (item) => (await batcher.submit({ kind: 'advance', item })) as Advanced,
    end: async (item) => (await batcher.submit({ kind: 'end', item })) as boolean,
  };
}
