import type { Queryable } from '../../shared/db/db.ts';

/** A record of an NLP dataset revision as stored. */
export interface NlpRecordRow {
  seq: number;
  text: string;
  labels: string[];
  meta: Record<string, unknown> | null;
  created_at: string;
}

/** What upload_records writes per record. */
export interface NewNlpRecord {
  text: string;
  labels: string[];
  meta: Record<string, unknown> | null;
}

/** The record as responses show it: `id` is its position in the revision (1, 2, …, in upload order). */
export function nlpRecord(row: NlpRecordRow): Record<string, unknown> {
  return { id: row.seq, text: row.text, labels: row.labels, meta: row.meta, created_at: row.created_at };
}

/**
 * Records per INSERT of `insertRecords`: node-postgres builds each array parameter's literal on
 * the event loop (escaping and joining every element, then measuring and encoding the joined
 * string), about 12 ms of the control plane's thread per 1,000 records of a large upload; a
 * statement per slice lets other tenants' requests run between slices instead of waiting for the
 * whole upload's (≈ 120 ms at 10,000 records).
 */
export const RECORDS_PER_STATEMENT = 1000;

/**
 * Records a body thread already checked and encoded as the literals of their INSERTs
 * (control-plane/bodies/prepared.ts's PreparedRecords is one), RECORDS_PER_STATEMENT per slice.
 */
export interface EncodedRecords {
  readonly slices: ReadonlyArray<{ text: Uint8Array; labels: Uint8Array; meta: Uint8Array }>;
}

/**
 * Appends records to a revision, in the order given, a statement per `RECORDS_PER_STATEMENT` in
 * the caller's transaction. The caller holds the revision's row lock, so `seq` follows commit
 * order within the revision and a keyset page never skips a record committed late.
 */
export async function insertRecords(
  q: Queryable,
  revisionId: string,
  records: readonly NewNlpRecord[] | EncodedRecords,
): Promise<number> {
  let inserted = 0;
  // Each slice's three array literals; a body thread encoded a large upload's already.
  const slices: Array<[unknown, unknown, unknown]> = [];
  if ('slices' in records) {
    for (const slice of records.slices) slices.push([slice.text, slice.labels, slice.meta]);
  } else {
    for (let at = 0; at < records.length; at += RECORDS_PER_STATEMENT) {
      const slice = records.slice(at, at + RECORDS_PER_STATEMENT);
      slices.push([
        slice.map((r) => r.text),
        slice.map((r) => JSON.stringify(r.labels)),
        slice.map((r) => (r.meta === null ? null : JSON.stringify(r.meta))),
      ]);
    }
  }
  for (const [texts, labels, metas] of slices) {
    // The literals are typed text and cast: node-postgres sends a JS array as its literal's text,
    // and a byte array (a body thread's literal) as binary, which for `text` is the UTF-8 itself.
    const { rowCount } = await q.query(
      `INSERT INTO nlp_records (revision_id, text, labels, meta)
       SELECT $1::uuid, r.text, r.labels, r.meta
         FROM unnest($2::text::text[], $3::text::jsonb[], $4::text::jsonb[]) WITH ORDINALITY AS r (text, labels, meta, ord)
        ORDER BY r.ord`,
      [revisionId, texts, labels, metas],
    );
    inserted += rowCount ?? 0;
  }
  return inserted;
}

/** One page of the revision's records after `after` (a `seq`), in upload order. */
export async function listRecords(
  q: Queryable,
  revisionId: string,
  after: number,
  limit: number,
): Promise<NlpRecordRow[]> {
  const { rows } = await q.query<NlpRecordRow>(
    `SELECT seq, text, labels, meta, created_at FROM nlp_records
      WHERE revision_id = $1::uuid AND seq > $2::bigint ORDER BY seq LIMIT $3::int`,
    [revisionId, after, limit],
  );
  return rows;
}

/** How many records the revision holds (Get Revision's `counts.records`). */
export async function recordCount(q: Queryable, revisionId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM nlp_records WHERE revision_id = $1::uuid',
    [revisionId],
  );
  return rows[0]!.n;
}
