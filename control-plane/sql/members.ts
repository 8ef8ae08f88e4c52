import type { Queryable } from '../../shared/db/db.ts';
import type { Role } from '../../shared/roles.ts';

/** Memberships exist on organizations and blobs only. */
export type MemberTarget = 'organization' | 'blob';

export interface MemberRow {
  target: MemberTarget;
  target_id: string;
  user_id: string;
  role: Role;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `CASE WHEN m.org_id IS NOT NULL THEN 'organization' ELSE 'blob' END AS target,
  COALESCE(m.org_id, m.blob_id) AS target_id, m.user_id, m.role, m.created_at, m.updated_at`;

const COLUMN: Record<MemberTarget, 'org_id' | 'blob_id'> = { organization: 'org_id', blob: 'blob_id' };

/** The membership record (docs/access.md, "Memberships"). */
export function memberRecord(row: MemberRow): Record<string, unknown> {
  return {
    target: row.target,
    target_id: row.target_id,
    user_id: row.user_id,
    role: row.role,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/**
 * Grants `role`, or changes the role of an existing membership (it keeps its `created_at`). The
 * partial unique index is the arbiter, so two simultaneous grants end in one membership.
 */
export async function upsertMembership(
  q: Queryable,
  target: MemberTarget,
  targetId: string,
  userId: string,
  role: Role,
): Promise<MemberRow> {
  const column = COLUMN[target];
  const { rows } = await q.query<MemberRow>(
    `INSERT INTO memberships AS m (${column}, user_id, role) VALUES ($1::uuid, $2::uuid, $3)
     ON CONFLICT (${column}, user_id) WHERE ${column} IS NOT NULL
     DO UPDATE SET role = EXCLUDED.role,
                   updated_at = CASE WHEN m.role = EXCLUDED.role THEN m.updated_at ELSE now() END
     RETURNING ${COLUMNS}`,
    [targetId, userId, role],
  );
  return rows[0]!;
}

export async function deleteMembership(
  q: Queryable,
  target: MemberTarget,
  targetId: string,
  userId: string,
): Promise<MemberRow | undefined> {
  const { rows } = await q.query<MemberRow>(
    `DELETE FROM memberships m WHERE m.${COLUMN[target]} = $1::uuid AND m.user_id = $2::uuid RETURNING ${COLUMNS}`,
    [targetId, userId],
  );
  return rows[0];
}

/** Every membership on a target, oldest first (unpaginated). */
export async function listMemberships(q: Queryable, target: MemberTarget, targetId: string): Promise<MemberRow[]> {
  const { rows } = await q.query<MemberRow>(
    `SELECT ${COLUMNS} FROM memberships m WHERE m.${COLUMN[target]} = $1::uuid ORDER BY m.created_at, m.user_id`,
    [targetId],
  );
  return rows;
}
