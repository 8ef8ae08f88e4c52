/**
 * What one account may keep stored beyond the limits catalog (docs/operations.md, "What one tenant
 * can do to the others"): the catalog bounds each NLP upload and graph mutation, not what a
 * revision accumulates. These bounds are the service's configuration (Config['storage']), the
 * same for every account; 0 turns one off. The counts they are checked against change in the
 * writing transaction (migration 027), so a refusal rolls the write back whole.
 */
import type { Config } from '../../shared/config.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { RevisionUsage } from '../sql/revision-usage.ts';

type StorageBounds = Config['storage'];

function past(count: number, bound: number): boolean {
  return bound > 0 && count > bound;
}

function full(what: string, bound: number, setting: string): ServiceError {
  return new ServiceError(
    'conflict',
    `The revision would hold more than ${bound} ${what}, the most the service keeps in one revision (${setting}); nothing was written.`,
  );
}

/**
 * After an upload_records insert: 409 `conflict` when the revision now holds more records or
 * record bytes than the service keeps (NLP_RECORDS_PER_REVISION, NLP_BYTES_PER_REVISION).
 */
export function checkRecordBounds(after: RevisionUsage, bounds: StorageBounds): void {
  if (past(after.records, bounds.nlpRecordsPerRevision))
    throw full('records', bounds.nlpRecordsPerRevision, 'NLP_RECORDS_PER_REVISION');
  if (past(after.recordBytes, bounds.nlpBytesPerRevision))
    throw full('bytes of records', bounds.nlpBytesPerRevision, 'NLP_BYTES_PER_REVISION');
}

/**
 * After a mutate_graph call: 409 `conflict` when the call grew the revision's elements or their
 * bytes past GRAPH_ELEMENTS_PER_REVISION or GRAPH_BYTES_PER_REVISION. A call that grows neither
 * (deletes, smaller replacements) always passes, so a revision over its bound can be trimmed.
 */
export function checkElementBounds(before: RevisionUsage, after: RevisionUsage, bounds: StorageBounds): void {
  if (after.elements > before.elements && past(after.elements, bounds.graphElementsPerRevision))
    throw full('graph elements', bounds.graphElementsPerRevision, 'GRAPH_ELEMENTS_PER_REVISION');
  if (after.elementBytes > before.elementBytes && past(after.elementBytes, bounds.graphBytesPerRevision))
    throw full('bytes of graph elements', bounds.graphBytesPerRevision, 'GRAPH_BYTES_PER_REVISION');
}
