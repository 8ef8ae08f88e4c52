import type { Queryable } from '../../shared/db/db.ts';
import type { RunLimits } from '../../shared/workflow/run-limits.ts';
import { EXECUTION_RECORD_COLUMNS, type ExecutionRecordRow } from '../../shared/workflow/execution-record.ts';
import type { WorkflowGraph } from '../../shared/workflow/graph.ts';
import { tableListing, type RecordSource } from '../workflow/record-cursor.ts';

export interface NewExecution {
  sessionId: string;
  orgId: string;
  blobId: string;
  revisionId: string;
  definitionId: string;
  /** The definition's graph, copied: the execution runs it even if the definition is deleted. */
  graph: WorkflowGraph;
  inputData: unknown;
  limits: RunLimits;
}

/**
 * Inserts a queued execution. Its state already names the start node and its input, so the first
 * runner to claim it starts there like any resumption. Call after taking both quota slots in the
 * same transaction.
 */
export async function insertExecution(q: Queryable, fields: NewExecution): Promise<ExecutionRecordRow> {
  const input = JSON.stringify(fields.inputData ?? null);
  const { rows } = await q.query<ExecutionRecordRow>(
    `INSERT INTO executions AS e (session_id, org_id, blob_id, revision_id, definition_id, graph, input_data, limits, state)
     VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5::uuid, $6::jsonb, $7::jsonb, $8::jsonb,
             jsonb_build_object('node', $6::jsonb->'start', 'input', $7::jsonb))
     RETURNING ${EXECUTION_RECORD_COLUMNS}`,
    [fields.sessionId, fields.orgId, fields.blobId, fields.revisionId, fields.definitionId, JSON.stringify(fields.graph), input, JSON.stringify(fields.limits)],
  );
  return rows[0]!;
}

/**
 * The execution `id` if it ran in a session of `revisionId`, else undefined. The join, not the
 * denormalised `revision_id`, decides, so the answer holds for any row however it was written.
 */
export async function findExecution(q: Queryable, revisionId: string, id: string): Promise<ExecutionRecordRow | undefined> {
  const { rows } = await q.query<ExecutionRecordRow>(
    `SELECT ${EXECUTION_RECORD_COLUMNS} FROM executions e JOIN sessions s ON s.id = e.session_id
      WHERE e.id = $1::uuid AND s.revision_id = $2::uuid`,
    [id, revisionId],
  );
  return rows[0];
}

/** `list_executions`: the session's executions, newest first (the record cursor). */
export function executionListing(q: Queryable, sessionId: string): RecordSource<ExecutionRecordRow> {
  return tableListing<ExecutionRecordRow>(q, { table: 'executions', alias: 'e', columns: EXECUTION_RECORD_COLUMNS, scopeColumn: 'session_id', scopeId: sessionId });
}
