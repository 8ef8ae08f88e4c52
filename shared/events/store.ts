import type { Queryable } from '../db/db.ts';
import { preparedQuery } from '../db/prepared-query.ts';

/** The channel on which every appended event is announced (payload: `<stream>:<owner id>:<event id>`). */
export const EVENTS_CHANNEL = 'ws_events';

export interface EventRecord {
  id: string;
  kind: string;
  at: string;
  session_id: string;
  execution_id: string | null;
  node: string | null;
  attributes: Record<string, unknown>;
}

export interface NewEvent {
  sessionId: string;
  kind: string;
  executionId?: string | null;
  node?: string | null;
  attributes?: Record<string, unknown>;
}

/** An event row as both event tables return it (`id` is the table's bigint identity). */
export interface EventRow {
  id: number;
  kind: string;
  at: string;
  session_id: string;
  execution_id: string | null;
  node: string | null;
  attributes: Record<string, unknown>;
}

/** The event record (docs/sessions-and-events.md, "Event listings"); ids are strings so clients never depend on their numeric form. */
export function eventRecord(row: EventRow): EventRecord {
  return {
    id: String(row.id),
    kind: row.kind,
    at: row.at,
    session_id: row.session_id,
    execution_id: row.execution_id,
    node: row.node,
    attributes: row.attributes,
  };
}

/**
 * Appends a session event in the caller's transaction and announces it with NOTIFY, which
 * PostgreSQL delivers only if the transaction commits, so subscribers never see a rolled-back event.
 */
export async function appendSessionEvent(q: Queryable, event: NewEvent): Promise<EventRecord> {
  const { rows } = await preparedQuery<EventRow>(
    q,
    'ws_session_event_append',
    `WITH e AS (
       INSERT INTO session_events (session_id, execution_id, kind, node, attributes)
       VALUES ($1::uuid, $2::uuid, $3, $4, $5::jsonb)
       RETURNING id, kind, at, session_id, execution_id, node, attributes)
     SELECT e.*, pg_notify($6, 'session:' || e.session_id || ':' || e.id) FROM e`,
    [
      event.sessionId,
      event.executionId ?? null,
      event.kind,
      event.node ?? null,
      JSON.stringify(event.attributes ?? {}),
      EVENTS_CHANNEL,
    ],
  );
  return eventRecord(rows[0]!);
}

/** Appends an execution event (same transaction and NOTIFY rules as session events). */
export async function appendExecutionEvent(
  q: Queryable,
  event: NewEvent & { executionId: string },
): Promise<EventRecord> {
  const { rows } = await preparedQuery<EventRow>(
    q,
    'ws_execution_event_append',
    `WITH e AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       VALUES ($1::uuid, $2::uuid, $3, $4, $5::jsonb)
       RETURNING id, kind, at, session_id, execution_id, node, attributes)
     SELECT e.*, pg_notify($6, 'execution:' || e.execution_id || ':' || e.id) FROM e`,
    [
      event.executionId,
      event.sessionId,
      event.kind,
      event.node ?? null,
      JSON.stringify(event.attributes ?? {}),
      EVENTS_CHANNEL,
    ],
  );
  return eventRecord(rows[0]!);
}

/** The two event logs: a session's events, and an execution's. Each has its own id sequence. */
export type EventStream = 'session' | 'execution';

/** The largest event id (bigint): the upper bound of an owner's range of (owner, id) pairs. */
const MAX_ID = '9223372036854775807';

// Table and owner column per stream; both are constants, never request input.
const STREAMS = {
  session: { table: 'session_events', owner: 'session_id' },
  execution: { table: 'execution_events', owner: 'execution_id' },
} as const satisfies Record<EventStream, { table: string; owner: string }>;

/**
 * Up to `count` events of one session or execution with an id above `afterId`, in id order: a
 * keyset read, so rows inserted meanwhile are neither repeated nor shift the page.
 *
 * The owner is bounded by row comparisons, not `owner = $1`: with an equality the planner treats
 * the owner as a constant and `ORDER BY owner, id` as `ORDER BY id`, which the primary key also
 * gives, and for a session holding a large share of the table it walks the primary key from the
 * cursor on and filters — for a session idle since, every other session's events written
 * meanwhile. The range of (owner, id) pairs is something only the (owner, id) index reads in
 * order (test/event-listing-plans.test.ts builds such a table and checks the plan).
 */
export async function readEvents(
  q: Queryable,
  stream: EventStream,
  ownerId: string,
  afterId: number,
  count: number,
): Promise<EventRow[]> {
  const { table, owner } = STREAMS[stream];
  const { rows } = await q.query<EventRow>(
    `SELECT id, kind, at, session_id, execution_id, node, attributes FROM ${table}
      WHERE (${owner}, id) > ($1::uuid, $2::bigint) AND (${owner}, id) <= ($1::uuid, ${MAX_ID})
      ORDER BY ${owner}, id LIMIT $3::int`,
    [ownerId, afterId, count],
  );
  return rows;
}

/**
 * The id of the newest event of one session or execution (0 when it has none). Read as the last
 * entry of the (owner, id) index (bounded as in readEvents): `max(id)` may be planned as a backward
 * walk of the primary key that filters out every newer event of every other owner.
 */
export async function lastEventId(q: Queryable, stream: EventStream, ownerId: string): Promise<number> {
  const { table, owner } = STREAMS[stream];
  const { rows } = await q.query<{ id: number }>(
    `SELECT coalesce((SELECT id FROM ${table}
                        WHERE (${owner}, id) > ($1::uuid, 0) AND (${owner}, id) <= ($1::uuid, ${MAX_ID})
                        ORDER BY ${owner} DESC, id DESC LIMIT 1), 0)::bigint AS id`,
    [ownerId],
  );
  return rows[0]!.id;
}
