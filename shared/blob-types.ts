/**
 * The blob types (docs/blob-types.md, "Blob types"), each with its limit family (the prefix of its limit ids)
 * and the label of its group in limit reads, in catalog order. `singleRevision` marks a type
 * whose blob holds exactly one revision (docs/scheduler.md, "Scheduler": "A scheduler blob has exactly one revision").
 */
export const BLOB_TYPES = {
  'svc.compute.workflow': { family: 'workflow', label: 'Workflow', singleRevision: false },
  'svc.compute.scheduler': { family: 'scheduler', label: 'Scheduler', singleRevision: true },
  'svc.model.onnx': { family: 'onnx', label: 'ONNX Model', singleRevision: false },
  'svc.graph.graphdb': { family: 'graphdb', label: 'Graph', singleRevision: false },
  'svc.dataset.nlp': { family: 'nlp', label: 'NLP Dataset', singleRevision: false },
} as const satisfies Record<string, { family: string; label: string; singleRevision: boolean }>;

export type BlobType = keyof typeof BLOB_TYPES;

/** The type strings in catalog order. */
export const BLOB_TYPE_NAMES = Object.keys(BLOB_TYPES) as BlobType[];

/** True when `value` names one of the five blob types (exact, case-sensitive). */
export function isBlobType(value: string): value is BlobType {
  return Object.hasOwn(BLOB_TYPES, value);
}
