import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { tableListing, type RecordSource } from './table-listing.ts';

export interface SessionRow {
  id: string;
  alias: string | null;
  revision_id: string;
  status: 'active' | 'deleting';
  created_at: string;
}

/** The select list of a `SessionRow` from `sessions s`. */
export const SESSION_COLUMNS = 's.id, s.alias, s.revision_id, s.status, s.created_at';

/** Inserts an active session; a taken alias fails on `sessions_alias_key` (wrap in `claimingAlias`). */
export async function insertSession(q: Queryable, revisionId: string, alias: string | null): Promise<SessionRow> {
  const { rows } = await q.query<SessionRow>(
    `INSERT INTO sessions AS s (revision_id, alias) VALUES ($1::uuid, $2) RETURNING ${SESSION_COLUMNS}`,
    [revisionId, alias],
  );
  return rows[0]!;
}

/**
 * Removes, now, a session of the revision that is being deleted and still holds `alias`, so that
 * the alias is free again the moment its session entered `deleting` (as its quota slot is).
 * Waits for a background removal of the same session if one is running.
 */
export async function removeDeletingHolder(q: Queryable, revisionId: string, alias: string): Promise<void> {
  await q.query(`DELETE FROM sessions WHERE revision_id = $1::uuid AND alias = $2 AND status = 'deleting'`, [
    revisionId,
    alias,
  ]);
}

/**
 * Moves an active session to `deleting`, which frees its slot in `workflow.sessions_per_revision`.
 * Undefined when it was not active (a concurrent delete won, or it is already gone). The UPDATE's
 * own row lock is the only one taken: it does not wait for content writes in flight, whose rows
 * the removal's cascade takes with it anyway.
 */
export async function markDeleting(q: Queryable, sessionId: string): Promise<SessionRow | undefined> {
  const { rows } = await q.query<SessionRow>(
    `UPDATE sessions s SET status = 'deleting' WHERE s.id = $1::uuid AND s.status = 'active' RETURNING ${SESSION_COLUMNS}`,
    [sessionId],
  );
  return rows[0];
}

/**
 * Removes a session in `deleting` and, by FK cascade, everything it holds (objects, files,
 * thread items, graph, executions and their events, session events). True when it removed it.
 */
export async function removeSession(q: Queryable, sessionId: string): Promise<boolean> {
  const { rowCount } = await q.query(`DELETE FROM sessions WHERE id = $1::uuid AND status = 'deleting'`, [sessionId]);
  return (rowCount ?? 0) > 0;
}

/**
 * Removes one session left in `deleting`, skipping any that another removal holds locked.
 * Returns its id, or undefined when none is left to take.
 */
export async function removeOneDeleting(q: Queryable): Promise<string | undefined> {
  const { rows } = await q.query<{ id: string }>(
    `DELETE FROM sessions WHERE id = (
       SELECT id FROM sessions WHERE status = 'deleting' LIMIT 1 FOR UPDATE SKIP LOCKED)
     RETURNING id`,
  );
  return rows[0]?.id;
}

/** `list_sessions`: the revision's sessions, newest first, `deleting` ones included until removed. */
export function sessionListing(q: Queryable, revisionId: string): RecordSource<SessionRow> {
  return tableListing<SessionRow>(q, {
    table: 'sessions',
    alias: 's',
    columns: SESSION_COLUMNS,
    scopeColumn: 'revision_id',
    scopeId: revisionId,
  });
}

/**
 * The execution `executionId` if it ran in a session of `revisionId` (404 otherwise, including
 * for a value that is not an id: executions have no aliases).
 */
export async function findRevisionExecution(
  q: Queryable,
  revisionId: string,
  executionId: string,
): Promise<{ id: string; session_id: string }> {
  if (!isUuid(executionId)) throw new ServiceError('not_found', 'No such execution.');
  const { rows } = await q.query<{ id: string; session_id: string }>(
    `SELECT e.id, e.session_id FROM executions e JOIN sessions s ON s.id = e.session_id
      WHERE e.id = $1::uuid AND s.revision_id = $2::uuid`,
    [executionId, revisionId],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'No such execution.');
  return rows[0];
}
