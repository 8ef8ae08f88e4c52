/**
 * The `create_execution` function of the database (migrations 012–015) as TypeScript calls it:
 * shared by the `create_execution` command (control-plane/workflow/execution-creator.ts) and the
 * scheduler's fires (shared/scheduler/fire.ts), which create an execution exactly the same way.
 */
import type { Tx } from '../db/db.ts';
import { preparedQuery } from '../db/prepared-query.ts';
import { EVENTS_CHANNEL } from '../events/store.ts';
import { isUuid } from '../ids.ts';
import { EXECUTION_CREATED_CHANNEL } from '../queue/execution-jobs.ts';
import { limitById, type LimitId, type LimitInForce } from '../limits/index.ts';
import { RUN_LIMIT_IDS, type ExecutionRecordRow } from './execution-record.ts';

/** What `create_execution` asks of the database (see `createExecutionRow`). */
export interface NewExecution {
  revisionId: string;
  /** The organization of the session's blob: the holder of `workflow.running_executions_per_org`. */
  orgId: string;
  blobId: string;
  /** The session and the definition as the client named them: an id or an alias. */
  sessionRef: string;
  definitionRef: string;
  /** The input as JSON text (`null` when left out): it is stored as sent. */
  inputJson: string;
  /** The input's JSON serialization in UTF-8 bytes (0 when left out), for the ceiling. */
  inputBytes: number;
  /**
   * The traceparent of the span creating it (create_execution's, a fire's), stored with the row
   * for the runners' spans (shared/tracing/); absent while tracing is off.
   */
  traceparent?: string | undefined;
}

/** Why the database refused a create; nothing was written, and the caller rolls back. */
export type CreateRefusal =
  | { refusal: 'session_not_found' | 'session_deleting' | 'definition_not_found' }
  | { refusal: 'limit'; limit: LimitInForce; held: number | undefined };

interface CreateRow extends Omit<ExecutionRecordRow, 'id'> {
  refusal: 'session_not_found' | 'session_deleting' | 'definition_not_found' | 'limit' | null;
  refused_limit: LimitInForce | null;
  held: number | null;
  id: string | null;
  /** The organization's unfinished executions, this one included (batched creates only). */
  org_in_flight?: number | null;
  /** True once announced on EXECUTION_CREATED_CHANNEL (not part of the record). */
  announced?: boolean | null;
}

/** A created execution with the priority of its wake-up job (shared/queue/execution-jobs.ts, `fairPriority`). */
export type CreatedExecution = ExecutionRecordRow & { orgInFlight?: number };

// The catalog entries the function resolves, sent with every call as JSON: the catalog stays the
// only place a default or a most permissive value is written (migration 012 holds only the rules).
const spec = (id: LimitId) => JSON.stringify(limitById(id));
const INPUT_SPEC = spec('workflow.execution_input_bytes');
const ORG_SPEC = spec('workflow.running_executions_per_org');
const SESSION_SPEC = spec('workflow.executions_per_session');
const RUN_SPECS = JSON.stringify(RUN_LIMIT_IDS.map((id) => limitById(id)));

// Each created execution announced at commit for the runners (EXECUTION_CREATED_CHANNEL), in the
// create's own statement: no round trip more. A refused item announces nothing.
const ANNOUNCE = `CASE WHEN r.id IS NOT NULL THEN (SELECT true FROM pg_notify('${EXECUTION_CREATED_CHANNEL}', r.id::text)) END AS announced`;

const CREATE_SQL = `SELECT r.*, CASE WHEN r.id IS NOT NULL THEN org_running_executions($2::uuid) END AS org_in_flight,
                           ${ANNOUNCE}
                      FROM create_execution($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::text, $6::uuid, $7::text, $8::jsonb, $9::int,
                        $10::jsonb, $11::jsonb, $12::jsonb, $13::jsonb, $14::text) AS r`;

/**
 * Creates a queued execution in one round trip (the `create_execution` function of migration
 * 012): finds the active session and the definition, resolves the limits from the blob's
 * ownership chain, refuses in the specified order (`workflow.execution_input_bytes`, then
 * `workflow.running_executions_per_org`, then `workflow.executions_per_session`), takes both
 * quota slots under their holder row locks, inserts the row with its five run limits and appends
 * `execution.created` to the session's events with its NOTIFY. Call it in the transaction that
 * also sends the execution's job; on a refusal, roll that transaction back.
 */
export async function createExecutionRow(tx: Tx, fields: NewExecution): Promise<CreatedExecution | CreateRefusal> {
  const sessionById = isUuid(fields.sessionRef);
  const definitionById = isUuid(fields.definitionRef);
  const { rows } = await preparedQuery<CreateRow>(tx, 'cp_create_execution', CREATE_SQL, [
    fields.revisionId,
    fields.orgId,
    fields.blobId,
    sessionById ? fields.sessionRef : null,
    sessionById ? null : fields.sessionRef,
    definitionById ? fields.definitionRef : null,
    definitionById ? null : fields.definitionRef,
    fields.inputJson,
    fields.inputBytes,
    INPUT_SPEC,
    ORG_SPEC,
    SESSION_SPEC,
    RUN_SPECS,
    EVENTS_CHANNEL,
  ]);
  const result = resultOf(rows[0]!);
  if (!('refusal' in result) && fields.traceparent !== undefined)
    await storeTraceparents(tx, [result.id], [fields.traceparent]);
  return result;
}

/**
 * Stores the creating span's traceparent on each new execution (migration 021). A statement of
 * its own rather than a parameter of the `create_execution` function: with tracing off (no
 * traceparent) it is never sent, so creates cost what they did; with tracing on it is one more
 * statement per batch, an update of a column no index holds (a HOT update on the fresh page).
 */
async function storeTraceparents(tx: Tx, ids: readonly string[], traceparents: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await preparedQuery(
    tx,
    'cp_execution_traceparents',
    'UPDATE executions e SET traceparent = t.traceparent FROM unnest($1::uuid[], $2::text[]) AS t (id, traceparent) WHERE e.id = t.id',
    [ids, traceparents],
  );
}

// The same function over arrays, one call per item in array order (a nested loop over the
// unnested input): each call's statements take their own snapshots, so an item's counts include
// the items before it in the batch.
// org_in_flight is read right after each item's call: its wake-up's fair-queueing priority.
const CREATE_MANY_SQL = `SELECT r.*, CASE WHEN r.id IS NOT NULL THEN org_running_executions(i.org_id) END AS org_in_flight, ${ANNOUNCE}
                          FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::uuid[], $7::text[], $8::text[], $9::int[])
                          WITH ORDINALITY AS i(revision_id, org_id, blob_id, session_id, session_alias, definition_id, definition_alias, input, input_bytes, ord)
  CROSS JOIN LATERAL create_execution(i.revision_id, i.org_id, i.blob_id, i.session_id, i.session_alias, i.definition_id, i.definition_alias,
                                      i.input::jsonb, i.input_bytes, $10::jsonb, $11::jsonb, $12::jsonb, $13::jsonb, $14::text) AS r
  ORDER BY i.ord`;

function resultOf(row: CreateRow): CreatedExecution | CreateRefusal {
  const { refusal, refused_limit, held, id, org_in_flight, announced: _announced, ...record } = row;
  if (refusal === 'limit') return { refusal, limit: refused_limit!, held: held ?? undefined };
  if (refusal !== null) return { refusal };
  return org_in_flight === null || org_in_flight === undefined
    ? { id: id!, ...record }
    : { id: id!, ...record, orgInFlight: org_in_flight };
}

/**
 * `createExecutionRow` for several creates in one statement, in the order given (the caller
 * orders them by organization: see control-plane/workflow/execution-creator.ts). One result per
 * item; refused items wrote nothing, so the caller commits the others.
 */
export async function createExecutionRows(
  tx: Tx,
  items: readonly NewExecution[],
): Promise<Array<CreatedExecution | CreateRefusal>> {
  const refs = (ref: string) => (isUuid(ref) ? [ref, null] : [null, ref]);
  const { rows } = await preparedQuery<CreateRow>(tx, 'cp_create_executions', CREATE_MANY_SQL, [
    items.map((i) => i.revisionId),
    items.map((i) => i.orgId),
    items.map((i) => i.blobId),
    items.map((i) => refs(i.sessionRef)[0]),
    items.map((i) => refs(i.sessionRef)[1]),
    items.map((i) => refs(i.definitionRef)[0]),
    items.map((i) => refs(i.definitionRef)[1]),
    items.map((i) => i.inputJson),
    items.map((i) => i.inputBytes),
    INPUT_SPEC,
    ORG_SPEC,
    SESSION_SPEC,
    RUN_SPECS,
    EVENTS_CHANNEL,
  ]);
  if (rows.length !== items.length)
    throw new Error(`create_execution answered ${rows.length} rows for ${items.length} creates`);
  const results = rows.map(resultOf);
  const traced = results.flatMap((result, at) => {
    const traceparent = items[at]!.traceparent;
    return 'refusal' in result || traceparent === undefined ? [] : [{ id: result.id, traceparent }];
  });
  await storeTraceparents(
    tx,
    traced.map((x) => x.id),
    traced.map((x) => x.traceparent),
  );
  return results;
}

/** What `rerun_execution` asks of the database (see `rerunExecutionRow`). */
export interface NewRerun {
  /** The ended execution re-run: an execution of a session of `revisionId`. */
  originalId: string;
  revisionId: string;
  orgId: string;
  blobId: string;
  /** The node of the original's graph the re-run starts at. */
  node: string;
  /** The re-run's input as JSON text, and its serialization's UTF-8 bytes for the ceiling. */
  inputJson: string;
  inputBytes: number;
}

const RERUN_SQL = `SELECT r.refusal, r.refused_limit, r.held, r.id,
                          CASE WHEN r.id IS NOT NULL THEN org_running_executions($3::uuid) END AS org_in_flight
                     FROM rerun_execution($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::text, $6::jsonb, $7::int,
                                          $8::jsonb, $9::jsonb, $10::jsonb, $11::jsonb, $12::text) AS r`;

/**
 * Creates a queued re-run in one round trip (the `rerun_execution` function of migration 030):
 * the limits of a create in the same order as `createExecutionRow`, then a row running the
 * original's graph from `node` with the input, linked both ways (`rerun_of`, `rerun_by`), and
 * `execution.created` in the session's events. Call it in the transaction that sends the job.
 */
export async function rerunExecutionRow(
  tx: Tx,
  fields: NewRerun,
): Promise<{ id: string; orgInFlight: number | undefined } | CreateRefusal | { refusal: 'execution_not_found' }> {
  const { rows } = await preparedQuery<{
    refusal: 'execution_not_found' | 'session_deleting' | 'limit' | null;
    refused_limit: LimitInForce | null;
    held: number | null;
    id: string | null;
    org_in_flight: number | null;
  }>(tx, 'cp_rerun_execution', RERUN_SQL, [
    fields.originalId,
    fields.revisionId,
    fields.orgId,
    fields.blobId,
    fields.node,
    fields.inputJson,
    fields.inputBytes,
    INPUT_SPEC,
    ORG_SPEC,
    SESSION_SPEC,
    RUN_SPECS,
    EVENTS_CHANNEL,
  ]);
  const row = rows[0]!;
  if (row.refusal === 'limit') return { refusal: 'limit', limit: row.refused_limit!, held: row.held ?? undefined };
  if (row.refusal !== null) return { refusal: row.refusal };
  return { id: row.id!, orgInFlight: row.org_in_flight ?? undefined };
}
