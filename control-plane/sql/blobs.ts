import type { Queryable } from '../../shared/db/db.ts';
import type { BlobType } from '../../shared/blob-types.ts';
import { refColumn } from '../../shared/ids.ts';
import { GRANT, type Grant } from './grant.ts';

export interface BlobRow {
  id: string;
  alias: string;
  org_id: string;
  type: string;
  name: string;
  visibility: 'private' | 'public';
  status: 'ready' | 'failed';
  created_at: string;
  [GRANT]?: Grant;
}

export const BLOB_FIELDS = ['id', 'alias', 'org_id', 'type', 'name', 'visibility', 'status', 'created_at'] as const;
/** The select list of a `BlobRow` from `blobs b`. */
const BLOB_COLUMNS = BLOB_FIELDS.map((f) => `b.${f}`).join(', ');

/** The blob record as every response shows it (docs/resources.md, "Blobs"). */
export function blobRecord(row: BlobRow): Record<string, unknown> {
  return {
    id: row.id,
    alias: row.alias,
    org_id: row.org_id,
    type: row.type,
    name: row.name,
    visibility: row.visibility,
    status: row.status,
    created_at: row.created_at,
  };
}

/**
 * Locks the blob named by `/blobs/:org_id/:blob_id` before it is resolved and its standing
 * checked, so the check and the change that follows see the same row. Revision creation relies
 * on it too: numbers are `max + 1`, so two creations must not read the same max (and
 * `platform.revisions_per_blob` is checked under this lock). Locks nothing when there is no such blob.
 */
export async function lockBlobByRef(q: Queryable, orgRef: string, blobRef: string): Promise<void> {
  await q.query(
    `SELECT 1 FROM blobs b JOIN orgs o ON o.id = b.org_id
      WHERE o.${refColumn(orgRef)} = $1 AND b.${refColumn(blobRef)} = $2 FOR NO KEY UPDATE OF b`,
    [orgRef, blobRef],
  );
}

export async function insertBlob(
  q: Queryable,
  blob: { orgId: string; type: BlobType; alias: string; name: string; visibility: BlobRow['visibility'] },
): Promise<BlobRow> {
  const { rows } = await q.query<BlobRow>(
    `INSERT INTO blobs AS b (org_id, type, alias, name, visibility) VALUES ($1::uuid, $2, $3, $4, $5) RETURNING ${BLOB_COLUMNS}`,
    [blob.orgId, blob.type, blob.alias, blob.name, blob.visibility],
  );
  return rows[0]!;
}

/** Every blob of an organization, oldest first (the caller filters by standing). */
export async function listOrgBlobs(q: Queryable, orgId: string): Promise<BlobRow[]> {
  const { rows } = await q.query<BlobRow>(
    `SELECT ${BLOB_COLUMNS} FROM blobs b WHERE b.org_id = $1::uuid ORDER BY b.created_at, b.id`,
    [orgId],
  );
  return rows;
}

export interface BlobPatch {
  name?: string | undefined;
  alias?: string | undefined;
  visibility?: BlobRow['visibility'] | undefined;
}

/** Applies the fields present in `patch`. Undefined when the blob is gone. */
export async function updateBlob(q: Queryable, id: string, patch: BlobPatch): Promise<BlobRow | undefined> {
  const { rows } = await q.query<BlobRow>(
    `UPDATE blobs b SET name = COALESCE($2, b.name), alias = COALESCE($3, b.alias), visibility = COALESCE($4, b.visibility)
      WHERE b.id = $1::uuid RETURNING ${BLOB_COLUMNS}`,
    [id, patch.name ?? null, patch.alias ?? null, patch.visibility ?? null],
  );
  return rows[0];
}

/** Deletes the blob; its revisions, metadata and everything under them go by FK cascade. */
export async function deleteBlob(q: Queryable, id: string): Promise<BlobRow | undefined> {
  const { rows } = await q.query<BlobRow>(`DELETE FROM blobs b WHERE b.id = $1::uuid RETURNING ${BLOB_COLUMNS}`, [id]);
  return rows[0];
}
