import type { QueryResultRow } from 'pg';
import type { Queryable } from '../../shared/db/db.ts';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { UUID_RE } from '../../shared/ids.ts';

/**
 * Record cursors (specification, Pagination): `list_sessions`, `list_executions` and
 * `list_schedules` page newest first, ten rows at a time, and resume from the id of the last row
 * of the previous page (`last_session_id` in the response, `start_session_id` in the request,
 * whatever the listing holds). The cursor is a record, not a position: if that record is gone,
 * the listing cannot say where it was, and resumption fails as a server error
 * (`cursor_record_deleted`, 500) rather than silently restarting or skipping.
 */

/** The fixed page size; `limit` is not accepted. */
export const RECORD_PAGE_SIZE = 10;

/**
 * The request fields every record-cursor listing takes, to spread into its strict schema:
 * `z.strictObject({ session_id: refSchema, ...recordCursorParams })`. `start_session_id` is a
 * string (null is `invalid_request_body`, as for every cursor) with the shape of an id, since
 * only ids are handed out; `limit` is named so that sending it fails with a message saying why.
 */
export const recordCursorParams = {
  start_session_id: z.string().regex(UUID_RE, 'start_session_id must be the last_session_id of a previous page').optional(),
  limit: z.never({ error: `limit is not accepted: this listing returns pages of ${RECORD_PAGE_SIZE}, newest first` }).optional(),
};

/**
 * Where a record sits in its listing: its creation time as exact text (microseconds, UTC; see
 * `positionColumnsSql`) and its id, the tie-breaker between records created at the same instant.
 */
export interface RecordPosition {
  at: string;
  id: string;
}

/** One listing's two queries, scoped by the caller (a revision's sessions, a session's executions). */
export interface RecordSource<R extends { id: string }> {
  /** The position of record `id` if this listing holds it; undefined for a deleted record or one of another listing. */
  locate(id: string): Promise<RecordPosition | undefined>;
  /** Up to `count` rows, newest first, strictly older than `after` (from the newest when undefined). */
  read(after: RecordPosition | undefined, count: number): Promise<R[]>;
}

/** A page: the rows, and the id to resume from (null when nothing older remains). */
export interface RecordPage<R> {
  rows: R[];
  last_session_id: string | null;
}

/**
 * Reads the page that follows `startId` (the first page when undefined). Reads one row past the
 * page so the last page already answers `last_session_id: null`, never a trailing empty page.
 * The position is located once and then used by value, so the record being deleted after it was
 * located does not change the page.
 */
export async function readRecordPage<R extends { id: string }>(source: RecordSource<R>, startId: string | undefined): Promise<RecordPage<R>> {
  let after: RecordPosition | undefined;
  if (startId !== undefined) {
    after = await source.locate(startId);
    if (after === undefined) {
      throw new ServiceError('cursor_record_deleted', 'The record start_session_id names no longer exists in this listing; start again without it.');
    }
  }
  const rows = await source.read(after, RECORD_PAGE_SIZE + 1);
  const more = rows.length > RECORD_PAGE_SIZE;
  const page = more ? rows.slice(0, RECORD_PAGE_SIZE) : rows;
  return { rows: page, last_session_id: more ? page.at(-1)!.id : null };
}

/**
 * The select list that yields a `RecordPosition` for the row aliased `alias`. The time is
 * formatted in SQL, not read through the pool's parser: an ISO string in JavaScript keeps only
 * milliseconds, and a position rounded that way could skip or repeat rows created within the
 * same millisecond.
 */
export function positionColumnsSql(alias: string): string {
  return `to_char(${alias}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, ${alias}.id::text AS id`;
}

/**
 * The keyset condition "older than `after`" for rows aliased `alias`, with its parameters
 * numbered from `$firstParam`; `TRUE` without parameters for a first page. Pair it with
 * `newestFirstSql(alias)`; an index on `(scope, created_at DESC, id DESC)` serves both.
 */
export function olderThanSql(alias: string, after: RecordPosition | undefined, firstParam: number): { sql: string; params: unknown[] } {
  if (after === undefined) return { sql: 'TRUE', params: [] };
  return {
    sql: `(${alias}.created_at, ${alias}.id) < ($${firstParam}::timestamptz, $${firstParam + 1}::uuid)`,
    params: [after.at, after.id],
  };
}

/** The order of every record-cursor listing; it cannot be changed by the request. */
export function newestFirstSql(alias: string): string {
  return `ORDER BY ${alias}.created_at DESC, ${alias}.id DESC`;
}

/** A record-cursor listing of one table, scoped by one column (a revision's sessions, a session's executions). */
export interface TableListing {
  /** `sessions s`: the table and the alias the column lists use. */
  table: string;
  alias: string;
  /** The select list of a row, written against `alias`. */
  columns: string;
  /** The column naming the scope (e.g. `revision_id`) and its value. */
  scopeColumn: string;
  scopeId: string;
}

/**
 * The RecordSource of a table listing: `locate` finds a start record only inside the scope (a
 * record of another scope counts as deleted), `read` pages newest first from after it.
 */
export function tableListing<R extends { id: string }>(q: Queryable, listing: TableListing): RecordSource<R> {
  const { table, alias: a, columns, scopeColumn, scopeId } = listing;
  return {
    async locate(id: string): Promise<RecordPosition | undefined> {
      const { rows } = await q.query<RecordPosition>(
        `SELECT ${positionColumnsSql(a)} FROM ${table} ${a} WHERE ${a}.id = $1::uuid AND ${a}.${scopeColumn} = $2::uuid`,
        [id, scopeId],
      );
      return rows[0];
    },
    async read(after: RecordPosition | undefined, count: number): Promise<R[]> {
      const older = olderThanSql(a, after, 3);
      const { rows } = await q.query<R & QueryResultRow>(
        `SELECT ${columns} FROM ${table} ${a}
          WHERE ${a}.${scopeColumn} = $1::uuid AND ${older.sql}
          ${newestFirstSql(a)} LIMIT $2::int`,
        [scopeId, count, ...older.params],
      );
      return rows;
    },
  };
}
