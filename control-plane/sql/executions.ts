import type { Queryable } from '../../shared/db/db.ts';
import { EXECUTION_RECORD_COLUMNS, type ExecutionRecordRow } from '../../shared/workflow/execution-record.ts';
import { tableListing, type RecordSource } from './table-listing.ts';

/**
 * The execution `id` if it ran in a session of `revisionId`, else undefined. The join, not the
 * denormalised `revision_id`, decides, so the answer holds for any row however it was written.
 */
export async function findExecution(
  q: Queryable,
  revisionId: string,
  id: string,
): Promise<ExecutionRecordRow | undefined> {
  const { rows } = await q.query<ExecutionRecordRow>(
    `SELECT ${EXECUTION_RECORD_COLUMNS} FROM executions e JOIN sessions s ON s.id = e.session_id
      WHERE e.id = $1::uuid AND s.revision_id = $2::uuid`,
    [id, revisionId],
  );
  return rows[0];
}

/** What `rerun_execution` reads of the original: where it stopped, and whether `node` is in its graph. */
export interface RerunSource {
  id: string;
  ended_at: string | null;
  input_data: unknown;
  /** The node the execution stopped at (its state), null when it ran past its last node. */
  node: string | null;
  /** That node's input. */
  input: unknown;
  start: string;
  /** Whether the graph has the node asked for (or, when none is asked for, `node`). */
  has_node: boolean;
}

/**
 * The execution `id` of a session of `revisionId` as `rerun_execution` needs it; the graph stays
 * in the database (up to 2 MiB), only its start and one membership test come back.
 */
export async function findRerunSource(
  q: Queryable,
  revisionId: string,
  id: string,
  node: string | undefined,
): Promise<RerunSource | undefined> {
  const { rows } = await q.query<RerunSource>(
    `SELECT e.id, e.ended_at, e.input_data, e.state->>'node' AS node, e.state->'input' AS input,
            e.graph->>'start' AS start,
            jsonb_typeof(e.graph->'nodes'->coalesce($3::text, e.state->>'node')) = 'object' AS has_node
       FROM executions e JOIN sessions s ON s.id = e.session_id
      WHERE e.id = $1::uuid AND s.revision_id = $2::uuid`,
    [id, revisionId, node ?? null],
  );
  const row = rows[0];
  return row && { ...row, has_node: row.has_node === true };
}

/** `list_executions`: the session's executions, newest first (the record cursor). */
export function executionListing(q: Queryable, sessionId: string): RecordSource<ExecutionRecordRow> {
  return tableListing<ExecutionRecordRow>(q, {
    table: 'executions',
    alias: 'e',
    columns: EXECUTION_RECORD_COLUMNS,
    scopeColumn: 'session_id',
    scopeId: sessionId,
  });
}
