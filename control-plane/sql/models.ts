import type { Queryable } from '../../shared/db/db.ts';
import type { TensorSpec } from '../../shared/onnx/tensors.ts';

/** An ONNX revision's model as answered (docs/blob-types.md "Upload Model"). */
export interface ModelRecord {
  size: number;
  sha256: string;
  inputs: TensorSpec[];
  outputs: TensorSpec[];
}

/**
 * The model of an ONNX revision that ONNX Runtime opened at upload, as Upload Model answered it:
 * size, sha256, inputs and outputs; null while none is stored (nothing uploaded, or the last
 * upload failed and kept no bytes).
 */
export async function openedModel(q: Queryable, revisionId: string): Promise<ModelRecord | null> {
  const { rows } = await q.query<{
    size: string | number;
    sha256: string;
    inputs: TensorSpec[] | null;
    outputs: TensorSpec[] | null;
  }>(
    `SELECT size, sha256, inputs, outputs FROM models
      WHERE revision_id = $1::uuid AND error IS NULL AND (oid IS NOT NULL OR object_key IS NOT NULL)`,
    [revisionId],
  );
  const row = rows[0];
  if (row === undefined || row.inputs === null || row.outputs === null) return null;
  return { size: Number(row.size), sha256: row.sha256, inputs: row.inputs, outputs: row.outputs };
}
