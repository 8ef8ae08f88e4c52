/**
 * One fire of a schedule (docs/scheduler.md, "Fires"): in one transaction, under the schedule's
 * row lock, create the execution in the target session exactly as `create_execution` would (the
 * target's limits, rule 5), record the run, and move the schedule to its next fire with that
 * fire's job. Runners call it for each `schedule-fires` job (runner/scheduler/fire-loop.ts); the
 * ops API calls it for fireScheduleNow.
 *
 * Exactly once: a cron fire names its due time, and fires only while the schedule's
 * `next_fire_at` is still that time; the first fire to take the row lock moves it on, so every
 * other job for the same due time (a duplicate, a retry, the reconciler's) finds it moved and
 * fires nothing. `schedule_runs_due_key` holds the same rule in the database.
 */
import type { Db, Tx } from '../db/db.ts';
import type { LimitObject } from '../errors.ts';
import { preparedQuery } from '../db/prepared-query.ts';
import { limitInForce } from '../limits/in-force.ts';
import { limitObject, type LimitInForce } from '../limits/index.ts';
import { enqueueExecutions, type BatchJobQueue } from '../queue/execution-jobs.ts';
import { roleAtLeast, type Role } from '../roles.ts';
import { executionsCreated, scheduleFireLag } from '../metrics.ts';
import {
  createExecutionRows,
  type CreatedExecution,
  type CreateRefusal,
  type NewExecution,
} from '../workflow/create-execution.ts';
import { nextFire, parseCron } from './cron.ts';
import { FIRE_HORIZON_SECONDS, sendFireJobs } from './fire-jobs.ts';
import { RUN_COLUMNS, type RunError, type RunStatus, type ScheduleRunRow } from './schedule-record.ts';
import type { TraceSpan, Tracing } from '../tracing/tracing.ts';

/** What to fire: a cron fire names its due time; an operator's fire (fireScheduleNow) names none. */
export interface FireRequest {
  scheduleId: string;
  /** ISO time the cron named, or null to fire now whatever the schedule's state. */
  dueAt: string | null;
}

export type FireOutcome =
  /** `next`: the schedule's next fire, null when it has none (disabled, or an operator's fire). */
  | { fired: ScheduleRunRow; disabled: boolean; next: Date | null }
  /** Nothing fired: the schedule is gone, disabled, or already past this due time. */
  | { skipped: 'not_found' | 'stale' };

interface LockedSchedule {
  /** The request's position in the batch. */
  at: number;
  id: string;
  cron: string;
  timezone: string;
  target_revision_id: string;
  target_session_id: string;
  target_definition_id: string;
  input_json: string | null;
  enabled: boolean;
  due_matches: boolean | null;
  scheduler_blob_id: string;
  target_blob_id: string | null;
  target_org_id: string | null;
  writer_owns: boolean | null;
  writer_role: Role | null;
  db_now: string;
}

// The schedules of a batch under their row locks (taken in id order, so two batches never wait
// on each other in a circle), with what each fire decides on: the scheduler blob (for
// `scheduler.enabled`), the target's blob and organization (null once the target revision is
// gone), and the standing there of the account that last wrote the schedule, `updated_by`
// (ownership of the organization, or the highest membership on it or on the blob): every write
// checked that its caller could write the target, so the fire acts as whoever set what it runs. One row per request, in id order.
const LOCK_SQL = `
SELECT req.at::int AS at, sc.id, sc.cron, sc.timezone, sc.target_revision_id, sc.target_session_id, sc.target_definition_id,
       sc.input_data::text AS input_json, sc.enabled, sc.next_fire_at = req.due AS due_matches,
       r.blob_id AS scheduler_blob_id, tb.id AS target_blob_id, tb.org_id AS target_org_id,
       o.owner_id = sc.updated_by AS writer_owns,
       (SELECT m.role FROM memberships m
         WHERE m.user_id = sc.updated_by AND (m.org_id = tb.org_id OR m.blob_id = tb.id)
         ORDER BY array_position(ARRAY['read', 'write', 'admin'], m.role) DESC LIMIT 1) AS writer_role,
       now() AS db_now
  FROM unnest($1::uuid[], $2::timestamptz[]) WITH ORDINALITY AS req (id, due, at)
  JOIN schedules sc ON sc.id = req.id
  JOIN revisions r ON r.id = sc.revision_id
  LEFT JOIN revisions tr ON tr.id = sc.target_revision_id
  LEFT JOIN blobs tb ON tb.id = tr.blob_id
  LEFT JOIN orgs o ON o.id = tb.org_id
 ORDER BY sc.id, req.at
   FOR UPDATE OF sc`;

interface Decision {
  status: RunStatus;
  executionId: string | null;
  error: RunError | null;
  limit: LimitObject | null;
  /** The target is gone: the schedule is disabled. */
  disable: boolean;
}

const gone = (what: string): Decision => ({
  status: 'failed',
  executionId: null,
  error: { code: 'not_found', message: `The target ${what} no longer exists; the schedule was disabled.` },
  limit: null,
  disable: true,
});

const FORBIDDEN: Decision = {
  status: 'failed',
  executionId: null,
  error: {
    code: 'forbidden',
    message: 'The account that last wrote the schedule can no longer write the target; nothing was created.',
  },
  limit: null,
  disable: false,
};

/** What a fire decides before creating anything, or undefined when it goes on to create the execution. */
async function precheck(
  s: LockedSchedule,
  enabledOf: (blobId: string) => Promise<LimitInForce>,
): Promise<Decision | undefined> {
  if (s.target_blob_id === null || s.target_org_id === null) return gone('revision');
  if (!(s.writer_owns === true || roleAtLeast(s.writer_role, 'write'))) return FORBIDDEN;
  const enabled = await enabledOf(s.scheduler_blob_id);
  if (enabled.value !== true) {
    return {
      status: 'refused',
      executionId: null,
      error: {
        code: 'limit_exceeded',
        message: `The scheduler is not enabled for this organization (scheduler.enabled is ${String(enabled.value)}).`,
      },
      limit: limitObject(enabled),
      disable: false,
    };
  }
  return undefined;
}

/** The decision for a create's result: the execution, or why there is none. */
function outcomeOf(created: CreatedExecution | CreateRefusal): Decision {
  if (!('refusal' in created))
    return { status: 'started', executionId: created.id, error: null, limit: null, disable: false };
  switch (created.refusal) {
    case 'limit': {
      const limit = limitObject(created.limit, created.held);
      const message = `Limit ${limit.id} is ${String(limit.value)}${limit.held === undefined ? '' : ` and ${limit.held} are held`}; no execution was created.`;
      return {
        status: 'refused',
        executionId: null,
        error: { code: 'limit_exceeded', message },
        limit,
        disable: false,
      };
    }
    case 'session_not_found':
    case 'session_deleting':
      return gone('session');
    case 'definition_not_found':
      return gone('definition');
  }
}

function newExecution(s: LockedSchedule, span: TraceSpan | undefined): NewExecution {
  const inputJson = s.input_json ?? 'null';
  return {
    ...(span ? { traceparent: span.traceparent } : {}),
    revisionId: s.target_revision_id,
    orgId: s.target_org_id!,
    blobId: s.target_blob_id!,
    sessionRef: s.target_session_id,
    definitionRef: s.target_definition_id,
    inputJson,
    inputBytes: s.input_json === null ? 0 : Buffer.byteLength(inputJson, 'utf8'),
  };
}

/**
 * Fires a batch of schedules in one transaction (see the module comment): one statement each to
 * lock them, create their executions (the `create_execution` function, item by item in
 * organization order, as the control plane's group commit does), name the schedule on the
 * executions, send the executions' jobs, write the runs, move the schedules, and send their next
 * fires' jobs. A cron fire that comes late — the runners were down — fires once for the time it
 * missed and moves the schedule to its first fire after now: missed times are not caught up one
 * by one. Outcomes in request order.
 */
async function fireBatch(
  tx: Tx,
  queue: BatchJobQueue,
  requests: readonly FireRequest[],
  traced: FireSpans | null,
): Promise<FireOutcome[]> {
  const outcomes: FireOutcome[] = requests.map(() => ({ skipped: 'not_found' }));
  const { rows } = await preparedQuery<LockedSchedule>(tx, 'sched_fire_lock', LOCK_SQL, [
    requests.map((r) => r.scheduleId),
    requests.map((r) => r.dueAt),
  ]);

  // One fire per schedule: the request naming its next fire (or an operator's), the rest stale.
  const firing: LockedSchedule[] = [];
  const taken = new Set<string>();
  for (const row of rows) {
    const request = requests[row.at - 1]!;
    const due = request.dueAt !== null && row.enabled && row.due_matches === true;
    if ((request.dueAt === null || due) && !taken.has(row.id)) {
      taken.add(row.id);
      firing.push(row);
    } else {
      outcomes[row.at - 1] = { skipped: 'stale' };
    }
  }
  if (firing.length === 0) return outcomes;

  const enabledByBlob = new Map<string, Promise<LimitInForce>>();
  const enabledOf = (blobId: string) => {
    let found = enabledByBlob.get(blobId);
    if (found === undefined) {
      found = limitInForce(tx, { blobId }, 'scheduler.enabled');
      enabledByBlob.set(blobId, found);
    }
    return found;
  };
  const decisions = new Map<LockedSchedule, Decision>();
  for (const row of firing) {
    const decided = await precheck(row, enabledOf);
    if (decided !== undefined) decisions.set(row, decided);
  }

  // The creates, in organization order (the lock order every batch of creates keeps).
  const creating = firing
    .filter((row) => !decisions.has(row))
    .sort((a, b) => (a.target_org_id! < b.target_org_id! ? -1 : a.target_org_id! > b.target_org_id! ? 1 : 0));
  if (creating.length > 0) {
    // A span per fire that creates: the execution carries its traceparent, so its runs join its trace.
    const spans = creating.map((row) => traced?.start(row, requests[row.at - 1]!));
    const created = await createExecutionRows(
      tx,
      creating.map((row, i) => newExecution(row, spans[i])),
    );
    const started: Array<{ id: string; orgInFlight?: number | undefined; schedule: string }> = [];
    created.forEach((result, i) => {
      const decision = outcomeOf(result);
      spans[i]?.setAttributes(
        decision.executionId === null
          ? { 'workflow.fire.status': decision.status }
          : { 'workflow.fire.status': decision.status, 'workflow.execution.id': decision.executionId },
      );
      decisions.set(creating[i]!, decision);
      if (!('refusal' in result))
        started.push({ id: result.id, orgInFlight: result.orgInFlight, schedule: creating[i]!.id });
    });
    if (started.length > 0) {
      await tx.query(
        'UPDATE executions e SET schedule_id = s.schedule_id FROM unnest($1::uuid[], $2::uuid[]) AS s (id, schedule_id) WHERE e.id = s.id',
        [started.map((x) => x.id), started.map((x) => x.schedule)],
      );
      // Announced by the create statement: the jobs take the executions' ids (EXECUTION_CREATED_CHANNEL).
      await enqueueExecutions(queue, tx, started, { announced: true });
    }
  }

  // The runs, and each schedule's next fire.
  const next = new Map<LockedSchedule, Date | null>();
  for (const row of firing) {
    const request = requests[row.at - 1]!;
    const decision = decisions.get(row)!;
    if (decision.disable) next.set(row, null);
    else if (request.dueAt !== null) {
      const due = new Date(request.dueAt);
      const now = new Date(row.db_now);
      const from = due.getTime() > now.getTime() ? due : now;
      next.set(row, nextFire(parseCron(row.cron, row.timezone, from), from));
    }
  }
  const { rows: runs } = await preparedQuery<ScheduleRunRow & { at: number }>(
    tx,
    'sched_fire_runs',
    `INSERT INTO schedule_runs AS sr (schedule_id, due_at, status, execution_id, error, "limit")
     SELECT * FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $4::uuid[], $5::jsonb[], $6::jsonb[])
     RETURNING ${RUN_COLUMNS}`,
    [
      firing.map((r) => r.id),
      firing.map((r) => requests[r.at - 1]!.dueAt),
      firing.map((r) => decisions.get(r)!.status),
      firing.map((r) => decisions.get(r)!.executionId),
      firing.map((r) => {
        const e = decisions.get(r)!.error;
        return e && JSON.stringify(e);
      }),
      firing.map((r) => {
        const l = decisions.get(r)!.limit;
        return l && JSON.stringify(l);
      }),
    ],
  );
  const runOf = new Map(runs.map((run) => [run.schedule_id, run]));

  const moving = [...next.entries()];
  if (moving.length > 0) {
    // A next fire within the horizon gets its job now (recorded in fire_sent_for); a later one
    // is left to the runners' promoter (FIRE_HORIZON_SECONDS).
    const { rows: sent } = await preparedQuery<{ id: string; due: Date }>(
      tx,
      'sched_fire_move',
      `UPDATE schedules sc SET next_fire_at = m.next, enabled = m.next IS NOT NULL,
              fire_sent_for = CASE WHEN m.next < now() + make_interval(secs => $3::int) THEN m.next END
         FROM unnest($1::uuid[], $2::timestamptz[]) AS m (id, next) WHERE sc.id = m.id
       RETURNING sc.id, sc.fire_sent_for AS due`,
      [moving.map(([row]) => row.id), moving.map(([, at]) => at), FIRE_HORIZON_SECONDS],
    );
    await sendFireJobs(
      queue,
      tx,
      sent.filter((row) => row.due !== null).map((row) => ({ scheduleId: row.id, dueAt: new Date(row.due) })),
    );
  }

  for (const row of firing) {
    outcomes[row.at - 1] = {
      fired: runOf.get(row.id)!,
      disabled: decisions.get(row)!.disable,
      next: next.get(row) ?? null,
    };
  }
  return outcomes;
}

/**
 * Fires each request once, or finds it already fired (see the module comment); outcomes in
 * request order. The batch is one transaction; if it fails for any reason other than a refusal,
 * each request is tried again in a transaction of its own, so one fire's failure is never
 * another's (the error of a request that fails alone too is thrown after the others are done).
 */
export async function fireSchedules(
  db: Db,
  queue: BatchJobQueue,
  requests: readonly FireRequest[],
  tracing: Tracing | null = null,
): Promise<FireOutcome[]> {
  if (requests.length === 0) return [];
  try {
    return observed(
      await fireSpans(tracing, (traced) => db.transaction((tx) => fireBatch(tx, queue, requests, traced))),
    );
  } catch (error) {
    if (requests.length === 1) throw error;
    const outcomes: FireOutcome[] = [];
    let failure: unknown;
    for (const request of requests) {
      try {
        outcomes.push(
          observed(
            await fireSpans(tracing, (traced) => db.transaction((tx) => fireBatch(tx, queue, [request], traced))),
          )[0]!,
        );
      } catch (alone) {
        failure ??= alone;
        outcomes.push({ skipped: 'stale' });
      }
    }
    if (failure !== undefined) throw failure;
    return outcomes;
  }
}

/** Starts the span of a fire that creates an execution (see fireBatch). */
interface FireSpans {
  start(schedule: LockedSchedule, request: FireRequest): TraceSpan;
}

/**
 * Runs one fire transaction with a span per creating fire, ended once it committed, or failed
 * when it rolled back (its batch is then tried fire by fire, each with a span of its own). The
 * spans' parent is the active span: an operator's request for fireScheduleNow, none for a runner's
 * fires (each starts a trace).
 */
async function fireSpans<T>(tracing: Tracing | null, run: (traced: FireSpans | null) => Promise<T>): Promise<T> {
  if (tracing === null) return run(null);
  const spans: TraceSpan[] = [];
  const traced: FireSpans = {
    start(schedule, request) {
      const span = tracing.startSpan('schedule fire', {
        attributes: {
          'workflow.schedule.id': schedule.id,
          'workflow.fire.kind': request.dueAt === null ? 'now' : 'cron',
          ...(request.dueAt === null ? {} : { 'workflow.fire.due_at': request.dueAt.slice(0, 40) }),
        },
      });
      spans.push(span);
      return span;
    },
  };
  try {
    const result = await run(traced);
    for (const span of spans) span.end();
    return result;
  } catch (error) {
    for (const span of spans) span.end('internal_error');
    throw error;
  }
}

/** Counts committed fires in the metrics (a batch that rolled back and was retried fire by fire counts once). */
function observed(outcomes: FireOutcome[]): FireOutcome[] {
  for (const outcome of outcomes) {
    if (!('fired' in outcome)) continue;
    const run = outcome.fired;
    if (run.execution_id !== null) executionsCreated.inc({ source: 'schedule' });
    if (run.due_at !== null)
      scheduleFireLag.observe(Math.max(0, Date.parse(run.fired_at) - Date.parse(run.due_at)) / 1000);
  }
  return outcomes;
}

/** One fire (fireScheduleNow, and tests): `fireSchedules` with one request. */
export async function fireSchedule(
  db: Db,
  queue: BatchJobQueue,
  request: FireRequest,
  tracing: Tracing | null = null,
): Promise<FireOutcome> {
  return (await fireSchedules(db, queue, [request], tracing))[0]!;
}
