import type { Queryable } from '../../shared/db/db.ts';

/** What a revision holds (migration 027's `revision_usage`, kept by triggers in the writers' transactions). */
export interface RevisionUsage {
  records: number;
  recordBytes: number;
  elements: number;
  elementBytes: number;
}

const NONE: RevisionUsage = { records: 0, recordBytes: 0, elements: 0, elementBytes: 0 };

/** The revision's counts as this transaction sees them (its own writes included); zeros before its first write. */
export async function revisionUsage(q: Queryable, revisionId: string): Promise<RevisionUsage> {
  const { rows } = await q.query<{ records: string; record_bytes: string; elements: string; element_bytes: string }>(
    'SELECT records, record_bytes, elements, element_bytes FROM revision_usage WHERE revision_id = $1::uuid',
    [revisionId],
  );
  const row = rows[0];
  if (row === undefined) return NONE;
  return {
    records: Number(row.records),
    recordBytes: Number(row.record_bytes),
    elements: Number(row.elements),
    elementBytes: Number(row.element_bytes),
  };
}
