import type { Queryable } from '../db/db.ts';
import type { TensorSpec } from './tensors.ts';

/** What a model run needs to know of a revision's model. */
export interface RunnableModel {
  revisionId: string;
  /** The organization of the model's blob: a workflow may run only its own organization's models. */
  orgId: string;
  blobId: string;
  sha256: string;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
}

/**
 * The model of an ONNX revision that opened at upload (revision `ready`, bytes kept), or why not:
 * `not_found` (no such revision, or not an ONNX one), `no_model` (nothing uploaded, or it failed).
 */
export async function findRunnableModel(
  q: Queryable,
  revisionId: string,
): Promise<RunnableModel | 'not_found' | 'no_model'> {
  const { rows } = await q.query<{
    org_id: string;
    blob_id: string;
    type: string;
    sha256: string | null;
    oid: number | null;
    object_key: string | null;
    inputs: TensorSpec[] | null;
    outputs: TensorSpec[] | null;
  }>(
    `SELECT b.org_id, b.id AS blob_id, b.type, m.sha256, m.oid, m.object_key, m.inputs, m.outputs
       FROM revisions r JOIN blobs b ON b.id = r.blob_id LEFT JOIN models m ON m.revision_id = r.id
      WHERE r.id = $1::uuid`,
    [revisionId],
  );
  const row = rows[0];
  if (row === undefined || row.type !== 'svc.model.onnx') return 'not_found';
  if (
    (row.oid === null && row.object_key === null) ||
    row.sha256 === null ||
    row.inputs === null ||
    row.outputs === null
  )
    return 'no_model';
  return {
    revisionId,
    orgId: row.org_id,
    blobId: row.blob_id,
    sha256: row.sha256,
    inputs: row.inputs,
    outputs: row.outputs,
  };
}
