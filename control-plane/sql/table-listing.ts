import type { QueryResultRow } from 'pg';
import type { Queryable } from '../../shared/db/db.ts';

// The SQL side of a record-cursor listing (control-plane/workflow/record-cursor.ts pages over it):
// positions, the keyset condition and order, and a listing of one table scoped by one column.

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
export function olderThanSql(
  alias: string,
  after: RecordPosition | undefined,
  firstParam: number,
): { sql: string; params: unknown[] } {
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
