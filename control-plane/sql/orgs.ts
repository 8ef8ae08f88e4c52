import type { Queryable } from '../../shared/db/db.ts';
import { refColumn } from '../../shared/ids.ts';
import { GRANT, type Grant } from './grant.ts';

export interface OrgRow {
  id: string;
  alias: string;
  name: string;
  visibility: 'private' | 'public';
  owner_id: string;
  created_at: string;
  [GRANT]?: Grant;
}

export const ORG_FIELDS = ['id', 'alias', 'name', 'visibility', 'owner_id', 'created_at'] as const;
/** The select list of an `OrgRow` from `orgs o`. */
export const ORG_COLUMNS = ORG_FIELDS.map((f) => `o.${f}`).join(', ');

export type Visibility = OrgRow['visibility'];

/** The organization record as every response shows it (docs/resources.md, "Organizations"). */
export function orgRecord(row: OrgRow): Record<string, unknown> {
  return {
    id: row.id,
    alias: row.alias,
    name: row.name,
    visibility: row.visibility,
    owner_id: row.owner_id,
    created_at: row.created_at,
  };
}

/**
 * Takes the owner's row lock so the owner's organization count and the new organization commit
 * together (the quota `platform.orgs_per_user` is checked under it). False when the user is gone.
 */
export async function lockOrgOwner(q: Queryable, userId: string): Promise<boolean> {
  const { rows } = await q.query('SELECT 1 FROM users WHERE id = $1::uuid FOR NO KEY UPDATE', [userId]);
  return rows.length > 0;
}

/**
 * Locks the organization named by id or alias, before it is resolved and its standing checked,
 * so the check and the change that follows see the same row (a concurrent transfer, visibility
 * change or delete waits). Locks nothing when there is no such organization.
 *
 * `NO KEY UPDATE` serialises the writers that take it without blocking unrelated inserts whose
 * foreign keys reference the row (memberships, keys), which only take `KEY SHARE`.
 */
export async function lockOrgByRef(q: Queryable, ref: string): Promise<void> {
  await q.query(`SELECT 1 FROM orgs WHERE ${refColumn(ref)} = $1 FOR NO KEY UPDATE`, [ref]);
}

export async function insertOrg(
  q: Queryable,
  org: { alias: string; name: string; visibility: Visibility; ownerId: string },
): Promise<OrgRow> {
  const { rows } = await q.query<OrgRow>(
    `INSERT INTO orgs AS o (alias, name, visibility, owner_id) VALUES ($1, $2, $3, $4::uuid) RETURNING ${ORG_COLUMNS}`,
    [org.alias, org.name, org.visibility, org.ownerId],
  );
  return rows[0]!;
}

export interface OrgPatch {
  name?: string | undefined;
  alias?: string | undefined;
  visibility?: Visibility | undefined;
  ownerId?: string | undefined;
}

/** Applies the fields present in `patch`; absent fields keep their value. Undefined when the org is gone. */
export async function updateOrg(q: Queryable, id: string, patch: OrgPatch): Promise<OrgRow | undefined> {
  const { rows } = await q.query<OrgRow>(
    `UPDATE orgs o SET name = COALESCE($2, o.name), alias = COALESCE($3, o.alias),
            visibility = COALESCE($4, o.visibility), owner_id = COALESCE($5::uuid, o.owner_id)
      WHERE o.id = $1::uuid RETURNING ${ORG_COLUMNS}`,
    [id, patch.name ?? null, patch.alias ?? null, patch.visibility ?? null, patch.ownerId ?? null],
  );
  return rows[0];
}

/** Deletes the organization; blobs, revisions and everything under them go by FK cascade. */
export async function deleteOrg(q: Queryable, id: string): Promise<OrgRow | undefined> {
  const { rows } = await q.query<OrgRow>(`DELETE FROM orgs o WHERE o.id = $1::uuid RETURNING ${ORG_COLUMNS}`, [id]);
  return rows[0];
}
