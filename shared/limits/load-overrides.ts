import type { Queryable } from '../db/db.ts';
import type { OverrideSet } from './resolve.ts';

/** Whose overrides to load: the nearest record a request concerns (ids, not aliases). */
export type OverrideTarget = { blobId: string } | { orgId: string } | { userId: string };

/** The ownership chain above the target as read now, and the overrides at each of its levels. */
export interface LoadedOverrides {
  /** `null` when the target does not exist (then `overrides` is empty). */
  readonly chain: { userId: string; orgId: string | null; blobId: string | null } | null;
  /** One map per level of the chain (empty when that level has none); no entry for levels above the target. */
  readonly overrides: OverrideSet;
}

interface Row {
  user_id: string;
  org_id: string | null;
  blob_id: string | null;
  target_type: 'user' | 'org' | 'blob' | null;
  limit_id: string | null;
  value: unknown;
}

// One round trip: the chain (blob → its organization → that organization's owner) is joined at
// read time, so an organization that changes owner follows the new owner's overrides from its
// next request (docs/limits.md, "What each operation checks": ownership is read on every request).
// Each level is one primary-key range scan of limit_overrides (target_type, target_id); a plain OR
// join condition would make the planner read every override of every target. The LEFT JOIN keeps
// the chain row when no level has an override, which tells "no overrides" from "no such target".
const LOAD_SQL = `
  WITH chain AS (
    SELECT o.owner_id AS user_id, b.org_id, b.id AS blob_id
      FROM blobs b JOIN orgs o ON o.id = b.org_id
     WHERE b.id = $3::uuid
    UNION ALL
    SELECT o.owner_id, o.id, NULL::uuid
      FROM orgs o
     WHERE $3::uuid IS NULL AND o.id = $2::uuid
    UNION ALL
    SELECT u.id, NULL::uuid, NULL::uuid
      FROM users u
     WHERE $3::uuid IS NULL AND $2::uuid IS NULL AND u.id = $1::uuid
  )
  SELECT c.user_id, c.org_id, c.blob_id, lo.target_type, lo.limit_id, lo.value
    FROM chain c
    LEFT JOIN LATERAL (
      SELECT ov.target_type, ov.limit_id, ov.value
        FROM (VALUES ('user', c.user_id), ('org', c.org_id), ('blob', c.blob_id)) AS l (target_type, target_id)
        JOIN limit_overrides ov ON ov.target_type = l.target_type AND ov.target_id = l.target_id
    ) lo ON true`;

/**
 * Loads, in one query, the overrides that bear on a request about `target`: for a blob, its own,
 * its organization's and that organization's current owner's; for an organization, its own and
 * its owner's; for a user, the user's. Run it inside the operation's transaction when the values
 * guard a quota, so the check and the write see the same state. Values come back as stored; pass
 * the result to `resolveLimit`/`resolveLimits`, which re-validate them.
 */
export async function loadOverrides(q: Queryable, target: OverrideTarget): Promise<LoadedOverrides> {
  const params = [
    'userId' in target ? target.userId : null,
    'orgId' in target ? target.orgId : null,
    'blobId' in target ? target.blobId : null,
  ];
  const { rows } = await q.query<Row>(LOAD_SQL, params);
  const first = rows[0];
  if (!first) return { chain: null, overrides: {} };
  const user: Record<string, unknown> = {};
  const org: Record<string, unknown> = {};
  const blob: Record<string, unknown> = {};
  const maps = { user, org, blob };
  for (const row of rows) {
    if (row.target_type !== null && row.limit_id !== null) maps[row.target_type][row.limit_id] = row.value;
  }
  const overrides: OverrideSet =
    first.blob_id !== null ? { user, org, blob } : first.org_id !== null ? { user, org } : { user };
  return { chain: { userId: first.user_id, orgId: first.org_id, blobId: first.blob_id }, overrides };
}
