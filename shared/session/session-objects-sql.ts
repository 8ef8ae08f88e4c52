import type { Queryable } from '../db/db.ts';
import type { RawJson } from '../prepared-json.ts';

/** A session object or file as read back, never with a file's bytes. */
export interface SessionObjectRow {
  id: string;
  session_id: string;
  alias: string;
  kind: 'object' | 'file';
  /** The JSON value of an object; null for a file. */
  value: unknown;
  content_type: string | null;
  size: number;
  created_at: string;
  updated_at: string;
  seq: number;
}

/** What one write stores under an alias: a JSON value (serialized) or a file's bytes. */
export type StoredContent =
  | { kind: 'object'; json: string | Uint8Array; size: number; answer?: RawJson }
  | { kind: 'file'; bytes: Buffer; contentType: string; size: number };

// Never `content`: a file's bytes leave only through downloadable().
const COLUMNS = `o.id, o.session_id, o.alias, o.kind, CASE WHEN o.kind = 'object' AND $8::boolean THEN o.value END AS value,
  o.content_type, o.size, o.created_at, o.updated_at, o.seq`;

/** The object record (docs/session-contents.md, "Records"): a file carries `content_type`, an object its `value`. */
export function sessionObjectRecord(row: SessionObjectRow): Record<string, unknown> {
  const base = { id: row.id, session_id: row.session_id, alias: row.alias, kind: row.kind };
  const body = row.kind === 'object' ? { value: row.value } : { content_type: row.content_type };
  return { ...base, ...body, size: row.size, created_at: row.created_at, updated_at: row.updated_at };
}

// An object's JSON is `$4::text::jsonb`: a body thread's (control-plane/bodies/) comes as UTF-8
// bytes, which node-postgres sends in binary, and a `text` in binary is those bytes.
// $8: whether the written object's value comes back; a body thread's write has its answer's text
// already (RawJson), so the value is not read back nor parsed here.
function params(sessionId: string, alias: string, content: StoredContent): unknown[] {
  return content.kind === 'object'
    ? [sessionId, alias, 'object', content.json, null, null, content.size, content.answer === undefined]
    : [sessionId, alias, 'file', null, content.bytes, content.contentType, content.size, false];
}

/**
 * The session's status under a FOR SHARE lock, or undefined when it is gone. Writers of session
 * contents share the lock, so they never wait for each other, while Delete Session's status change
 * waits for them to commit and every write that starts after it sees `deleting`.
 */
export async function shareLockSession(tx: Queryable, sessionId: string): Promise<'active' | 'deleting' | undefined> {
  const { rows } = await tx.query<{ status: 'active' | 'deleting' }>(
    'SELECT status FROM sessions WHERE id = $1::uuid FOR SHARE',
    [sessionId],
  );
  return rows[0]?.status;
}

/**
 * Serialises, until commit, the inserts of one table that take listing positions in one session.
 * A position (identity `seq`) is drawn at insert time but becomes visible at commit; two inserters
 * running together could commit out of draw order, and a page read between the two commits would
 * hand out a cursor past a row that appears later, behind it: a skipped row. Under this lock a
 * session's positions commit in the order they are drawn. Replacements take no position and no lock.
 */
export async function lockSessionInserts(
  tx: Queryable,
  table: 'session_objects' | 'thread_items',
  sessionId: string,
): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [table, sessionId]);
}

/**
 * Replaces what an existing alias holds (an object or a file, either way round), keeping its id,
 * position and created_at. Undefined when the session has no such alias.
 */
export async function replaceContent(
  tx: Queryable,
  sessionId: string,
  alias: string,
  content: StoredContent,
): Promise<SessionObjectRow | undefined> {
  const { rows } = await tx.query<SessionObjectRow>(
    `UPDATE session_objects o
        SET kind = $3, value = $4::text::jsonb, content = $5::bytea, content_type = $6, size = $7::int, updated_at = now()
      WHERE o.session_id = $1::uuid AND o.alias = $2
      RETURNING ${COLUMNS}`,
    params(sessionId, alias, content),
  );
  return rows[0];
}

/**
 * Creates an alias. A concurrent writer may have created it since replaceContent found nothing;
 * then this replaces it instead and `created` is false (`xmax = 0` only on a fresh insert).
 */
export async function insertContent(
  tx: Queryable,
  sessionId: string,
  alias: string,
  content: StoredContent,
): Promise<{ row: SessionObjectRow; created: boolean }> {
  const { rows } = await tx.query<SessionObjectRow & { created: boolean }>(
    `INSERT INTO session_objects AS o (session_id, alias, kind, value, content, content_type, size)
     VALUES ($1::uuid, $2, $3, $4::text::jsonb, $5::bytea, $6, $7::int)
     ON CONFLICT (session_id, alias) DO UPDATE
        SET kind = EXCLUDED.kind, value = EXCLUDED.value, content = EXCLUDED.content,
            content_type = EXCLUDED.content_type, size = EXCLUDED.size, updated_at = now()
     RETURNING ${COLUMNS}, (o.xmax = 0) AS created`,
    params(sessionId, alias, content),
  );
  const { created, ...row } = rows[0]!;
  return { row, created };
}

/** One page row: the object, and whether it fits the page's value budget. */
export interface ListedObjectRow extends SessionObjectRow {
  within: boolean;
}

/**
 * Up to `take` objects and files after position `afterSeq`, in position order. Rows past
 * `budget` bytes of cumulated size (the first row always fits) come back with `within` false and
 * no value, so a page of 200 five-MiB objects is never read into memory at once.
 */
export async function listContents(
  q: Queryable,
  sessionId: string,
  afterSeq: number,
  take: number,
  budget: number,
): Promise<ListedObjectRow[]> {
  const { rows } = await q.query<ListedObjectRow>(
    `SELECT p.id, p.session_id, p.alias, p.kind, p.content_type, p.size, p.created_at, p.updated_at, p.seq,
            p.within, CASE WHEN p.within AND p.kind = 'object' THEN o.value END AS value
       FROM (SELECT o.id, o.session_id, o.alias, o.kind, o.content_type, o.size, o.created_at, o.updated_at, o.seq,
                    (sum(o.size) OVER w <= $4::bigint OR row_number() OVER w = 1) AS within
               FROM session_objects o
              WHERE o.session_id = $1::uuid AND o.seq > $2::bigint
             WINDOW w AS (ORDER BY o.seq)
              ORDER BY o.seq
              LIMIT $3::int) p
       JOIN session_objects o ON o.id = p.id
      ORDER BY p.seq`,
    [sessionId, afterSeq, take, budget],
  );
  return rows;
}

/** A file's bytes and how to serve them, or undefined when the alias is absent. */
export async function downloadable(
  q: Queryable,
  sessionId: string,
  alias: string,
): Promise<{ kind: 'object' | 'file'; content: Buffer | null; content_type: string | null; size: number } | undefined> {
  const { rows } = await q.query<{
    kind: 'object' | 'file';
    content: Buffer | null;
    content_type: string | null;
    size: number;
  }>('SELECT kind, content, content_type, size FROM session_objects WHERE session_id = $1::uuid AND alias = $2', [
    sessionId,
    alias,
  ]);
  return rows[0];
}

/**
 * Which of `aliases` are files of the session, locked FOR SHARE so that none can be replaced by
 * an object before the caller's transaction (a thread item referencing them) commits.
 */
export async function shareLockFiles(
  tx: Queryable,
  sessionId: string,
  aliases: readonly string[],
): Promise<Set<string>> {
  if (aliases.length === 0) return new Set();
  const { rows } = await tx.query<{ alias: string }>(
    `SELECT alias FROM session_objects WHERE session_id = $1::uuid AND alias = ANY($2::text[]) AND kind = 'file' FOR SHARE`,
    [sessionId, aliases],
  );
  return new Set(rows.map((r) => r.alias));
}
