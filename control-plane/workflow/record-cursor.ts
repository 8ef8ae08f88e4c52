import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { UUID_RE } from '../../shared/ids.ts';
import type { RecordPosition, RecordSource } from '../sql/table-listing.ts';

/**
 * Record cursors (docs/sessions-and-events.md, "Record cursor"): `list_sessions`, `list_executions` and
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
  start_session_id: z
    .string()
    .regex(UUID_RE, 'start_session_id must be the last_session_id of a previous page')
    .optional(),
  limit: z
    .never({ error: `limit is not accepted: this listing returns pages of ${RECORD_PAGE_SIZE}, newest first` })
    .optional(),
};

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
export async function readRecordPage<R extends { id: string }>(
  source: RecordSource<R>,
  startId: string | undefined,
): Promise<RecordPage<R>> {
  let after: RecordPosition | undefined;
  if (startId !== undefined) {
    after = await source.locate(startId);
    if (after === undefined) {
      throw new ServiceError(
        'cursor_record_deleted',
        'The record start_session_id names no longer exists in this listing; start again without it.',
      );
    }
  }
  const rows = await source.read(after, RECORD_PAGE_SIZE + 1);
  const more = rows.length > RECORD_PAGE_SIZE;
  const page = more ? rows.slice(0, RECORD_PAGE_SIZE) : rows;
  return { rows: page, last_session_id: more ? page.at(-1)!.id : null };
}
