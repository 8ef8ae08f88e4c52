import { heldCount, type QuotaId } from '../../shared/limits/holdings.ts';
import type { Queryable, Tx } from '../../shared/db/db.ts';
import { copyDefinitions } from './definitions.ts';

export interface RevisionRow {
  id: string;
  blob_id: string;
  number: number;
  status: 'pending' | 'ready' | 'failed';
  created_at: string;
}

export const REVISION_FIELDS = ['id', 'blob_id', 'number', 'status', 'created_at'] as const;
/** The select list of a `RevisionRow` from `revisions r`. */
export const REVISION_COLUMNS = REVISION_FIELDS.map((f) => `r.${f}`).join(', ');

/** The revision record as every response shows it (docs/resources.md, "Revisions"). */
export function revisionRecord(row: RevisionRow): Record<string, unknown> {
  return { id: row.id, blob_id: row.blob_id, number: row.number, status: row.status, created_at: row.created_at };
}

/** How many revisions the blob holds now. */
export async function countRevisions(q: Queryable, blobId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>('SELECT count(*)::int AS n FROM revisions WHERE blob_id = $1::uuid', [
    blobId,
  ]);
  return rows[0]!.n;
}

/**
 * Inserts the blob's next revision, numbered one past the highest it holds. Call it under
 * the blob's row lock (`lockBlobByRef`) in the same transaction, or two creations could read
 * the same max.
 */
export async function insertNextRevision(q: Queryable, blobId: string): Promise<RevisionRow> {
  // An ONNX model revision is `pending` until its model is uploaded and opened (docs/blob-types.md).
  const { rows } = await q.query<RevisionRow>(
    `INSERT INTO revisions AS r (blob_id, number, status)
     SELECT $1::uuid, COALESCE(max(number), 0) + 1,
            CASE WHEN (SELECT type FROM blobs WHERE id = $1::uuid) = 'svc.model.onnx' THEN 'pending' ELSE 'ready' END
       FROM revisions WHERE blob_id = $1::uuid
     RETURNING ${REVISION_COLUMNS}`,
    [blobId],
  );
  return rows[0]!;
}

/** The revision `id` if it belongs to `blobId` (a canonical UUID is the caller's to check). */
export async function findBlobRevision(q: Queryable, blobId: string, id: string): Promise<RevisionRow | undefined> {
  const { rows } = await q.query<RevisionRow>(
    `SELECT ${REVISION_COLUMNS} FROM revisions r WHERE r.id = $1::uuid AND r.blob_id = $2::uuid`,
    [id, blobId],
  );
  return rows[0];
}

/**
 * A keyset page of the blob's revisions in ascending number, after `afterNumber` (exclusive).
 * Reads `limit + 1` rows so the caller knows whether another page follows.
 */
export async function listRevisions(
  q: Queryable,
  blobId: string,
  afterNumber: number,
  limit: number,
): Promise<RevisionRow[]> {
  const { rows } = await q.query<RevisionRow>(
    `SELECT ${REVISION_COLUMNS} FROM revisions r
      WHERE r.blob_id = $1::uuid AND r.number > $2::int
      ORDER BY r.number LIMIT $3::int`,
    [blobId, afterNumber, limit + 1],
  );
  return rows;
}

/** Deletes the revision; its metadata and everything under it go by FK cascade. */
export async function deleteRevision(q: Queryable, id: string): Promise<RevisionRow | undefined> {
  const { rows } = await q.query<RevisionRow>(
    `DELETE FROM revisions r WHERE r.id = $1::uuid RETURNING ${REVISION_COLUMNS}`,
    [id],
  );
  return rows[0];
}

/**
 * The `held` map of Get Revision: limit id → how many of it the revision holds, for the quotas
 * its blob type has (a workflow revision's definitions, playgrounds and sessions; a scheduler
 * revision's schedules).
 */
export async function revisionHeld(
  q: Queryable,
  revisionId: string,
  blobType: string,
): Promise<Record<string, number>> {
  const quotas = REVISION_QUOTAS[blobType] ?? [];
  const counts = await Promise.all(quotas.map((id) => heldCount(q, id, revisionId)));
  return Object.fromEntries(quotas.map((id, i) => [id, counts[i]!]));
}

const REVISION_QUOTAS: Record<string, readonly QuotaId[]> = {
  'svc.compute.workflow': [
    'workflow.definitions_per_revision',
    'workflow.playgrounds_per_revision',
    'workflow.sessions_per_revision',
  ],
  'svc.compute.scheduler': ['scheduler.schedules_per_revision'],
};

/**
 * Copies what a revision holds into a new revision of the same blob (Create Revision with
 * `copy_from`): its metadata listings and its definitions, inside the creating transaction, so a
 * copy is all or nothing. Sessions and executions are not copied. The copied definitions take no
 * slot through `takeSlot`: Create Revision checks only `platform.revisions_per_blob`
 * (docs/limits.md, "What each operation checks"), and both revisions share one blob and so one value in force. If an
 * override was lowered below what the source holds, the copy holds as many, and Create
 * Definition refuses in it until deletions bring it under (docs/workflow.md).
 */
export async function copyRevisionContent(tx: Tx, fromId: string, toId: string): Promise<void> {
  await tx.query(
    `INSERT INTO revision_metadata (revision_id, alias, entries)
     SELECT $2::uuid, alias, entries FROM revision_metadata WHERE revision_id = $1::uuid`,
    [fromId, toId],
  );
  await copyDefinitions(tx, fromId, toId);
}
