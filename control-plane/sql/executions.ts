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
