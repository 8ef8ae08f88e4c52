import type { Queryable } from '../db/db.ts';

export interface ThreadItemRow {
  id: string;
  seq: number;
  session_id: string;
  thread: string;
  text: string | null;
  data: unknown;
  files: string[];
  author_id: string | null;
  execution_id: string | null;
  created_at: string;
}

const COLUMNS =
  'i.id, i.seq, i.session_id, i.thread, i.text, i.data, i.files, i.author_id, i.execution_id, i.created_at';

/** The thread item record (docs/session-contents.md). */
export function threadItemRecord(row: ThreadItemRow): Record<string, unknown> {
  return {
    id: row.id,
    session_id: row.session_id,
    thread: row.thread,
    text: row.text,
    data: row.data,
    files: row.files,
    author_id: row.author_id,
    execution_id: row.execution_id,
    created_at: row.created_at,
  };
}

export interface NewThreadItem {
  sessionId: string;
  thread: string;
  text: string | null;
  /** Serialized JSON, or null for none. */
  dataJson: string | null;
  files: readonly string[];
  authorId: string | null;
  executionId: string | null;
}

/** Inserts an item; its `seq` (identity) is its position in the listings. */
export async function insertThreadItem(tx: Queryable, item: NewThreadItem): Promise<ThreadItemRow> {
  const { rows } = await tx.query<ThreadItemRow>(
    `INSERT INTO thread_items AS i (session_id, thread, text, data, files, author_id, execution_id)
     VALUES ($1::uuid, $2, $3, $4::jsonb, $5::text[], $6::uuid, $7::uuid)
     RETURNING ${COLUMNS}`,
    [item.sessionId, item.thread, item.text, item.dataJson, item.files, item.authorId, item.executionId],
  );
  return rows[0]!;
}

/** Up to `take` items after position `afterSeq` in posting order: of one thread, or of every thread when `thread` is null. */
export async function listThreadItems(
  q: Queryable,
  sessionId: string,
  thread: string | null,
  afterSeq: number,
  take: number,
): Promise<ThreadItemRow[]> {
  // Two statements rather than `$2 IS NULL OR thread = $2`, so each keeps its own index.
  const { rows } =
    thread === null
      ? await q.query<ThreadItemRow>(
          `SELECT ${COLUMNS} FROM thread_items i WHERE i.session_id = $1::uuid AND i.seq > $2::bigint ORDER BY i.seq LIMIT $3::int`,
          [sessionId, afterSeq, take],
        )
      : await q.query<ThreadItemRow>(
          `SELECT ${COLUMNS} FROM thread_items i WHERE i.session_id = $1::uuid AND i.thread = $4 AND i.seq > $2::bigint ORDER BY i.seq LIMIT $3::int`,
          [sessionId, afterSeq, take, thread],
        );
  return rows;
}
