import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { refColumn } from '../../shared/ids.ts';
import { SESSION_COLUMNS, type SessionRow } from '../sql/sessions.ts';

/** The session record (docs/sessions-and-events.md, "Sessions"). */
export function sessionRecord(row: SessionRow): Record<string, unknown> {
  return { id: row.id, alias: row.alias, revision_id: row.revision_id, status: row.status, created_at: row.created_at };
}

/**
 * Finds a session of `revisionId` by id or alias (404 when the revision has none by that name).
 * `lock` takes the session row lock, which serialises quota takers on the session.
 */
export async function findSession(q: Queryable, revisionId: string, ref: string, lock = false): Promise<SessionRow> {
  const { rows } = await q.query<SessionRow>(
    `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.revision_id = $1::uuid AND s.${refColumn(ref)} = $2${lock ? ' FOR UPDATE' : ''}`,
    [revisionId, ref],
  );
  if (!rows[0]) throw new ServiceError('not_found', 'No such session.');
  return rows[0];
}

/** As findSession, but a session being deleted refuses new content with 409 `conflict`. */
export async function findActiveSession(
  q: Queryable,
  revisionId: string,
  ref: string,
  lock = false,
): Promise<SessionRow> {
  const session = await findSession(q, revisionId, ref, lock);
  if (session.status !== 'active') throw new ServiceError('conflict', 'The session is being deleted.');
  return session;
}
