import { z } from 'zod';
import { decodeCursor, encodeCursor, keysetPage, parseLimit } from '../../shared/cursor.ts';
import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { BaseContext } from '../base-context.ts';
import { eventRecord, readEvents, type EventRecord, type EventStream } from '../../shared/events/store.ts';

/** Opaque-cursor listings take `limit` 1..200, 50 when absent (docs/sessions-and-events.md, "Event listings"). */
const EVENT_LIMIT_RANGE = { fallback: 50, max: 200 };

/** The cursor-bearing params of both event listings, to spread into their strict schemas. */
export const eventPageParams = {
  cursor: z.string().optional(),
  // Any value reaches parseLimit, so every malformed limit answers `invalid_limit`.
  limit: z.unknown().optional(),
};

// Each stream's cursors are bound to their listing name and owner id: a cursor from another
// session or execution, or from the other listing, fails verification (`invalid_cursor`).
const LISTING: Record<EventStream, { name: string; filter: 'session_id' | 'execution_id' }> = {
  session: { name: 'session_events', filter: 'session_id' },
  execution: { name: 'execution_events', filter: 'execution_id' },
};

/** A position is the id of the last event returned. */
const position = z.number().int().nonnegative();

export interface EventPage {
  events: EventRecord[];
  cursor: string | null;
}

/**
 * One page of a session's or an execution's events, oldest first, resuming after the event the
 * cursor names. The owner must already be resolved and access-checked.
 */
export async function listEvents(
  ctx: BaseContext,
  q: Queryable,
  stream: EventStream,
  ownerId: string,
  page: { cursor?: string | undefined; limit?: unknown },
): Promise<EventPage> {
  const limit = parseLimit(page.limit, EVENT_LIMIT_RANGE);
  const key = ctx.config.secrets.CURSOR_KEY;
  const listing = LISTING[stream];
  const filters = { [listing.filter]: ownerId };
  let after = 0;
  if (page.cursor !== undefined) {
    const decoded = position.safeParse(decodeCursor(key, listing.name, filters, page.cursor));
    if (!decoded.success) throw new ServiceError('invalid_cursor');
    after = decoded.data;
  }
  const { page: rows, last, more } = keysetPage(await readEvents(q, stream, ownerId, after, limit + 1), limit);
  return {
    events: rows.map(eventRecord),
    cursor: more && last ? encodeCursor(key, listing.name, filters, last.id) : null,
  };
}
