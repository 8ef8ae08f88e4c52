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

/** PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more. */
const MAX_PAYLOAD_BYTES = 8000;

/**
 * SQL for the CTE `<name>`: one NOTIFY per execution among the rows of `inserted` (a CTE returning
 * every column of the execution events it inserted), naming its newest event and — when it fits
 * in a NOTIFY — carrying the events themselves and `prev`, the id of the execution's event before
 * them. A listener whose subscriber was last sent `prev` pushes the events from the payload
 * without reading them back (docs/sessions-and-events.md, "Live updates"); any other subscriber,
 * or a payload too large to carry them, is read as before.
 *
 * `prev` is read in the statement's snapshot, which holds neither this statement's rows nor any
 * committed after the statement began: it may be older than the execution's true previous event
 * (a writer that committed while this one waited for the execution's row lock), never newer, and
 * an older one only sends the listener back to a read. Its probe is bounded like readEvents.
 */
export function announceExecutionEvents(name: string, inserted: string, channelParam: string): string {
  return `${name} AS (
       SELECT count(pg_notify(${channelParam}, CASE WHEN octet_length(p.full) < ${MAX_PAYLOAD_BYTES} THEN p.full ELSE p.short END)) AS n
         FROM (SELECT 'execution:' || g.execution_id || ':' || g.last AS short,
                      'execution:' || g.execution_id || ':' || g.last || ':' || coalesce(g.prev, 0) || ':' || g.events AS full
                 FROM (SELECT i.execution_id, max(i.id) AS last,
                              (SELECT x.id FROM execution_events x
                                WHERE (x.execution_id, x.id) > (i.execution_id, 0::bigint)
                                  AND (x.execution_id, x.id) < (i.execution_id, min(i.id))
                                ORDER BY x.execution_id DESC, x.id DESC LIMIT 1) AS prev,
                              json_agg(json_build_object('id', i.id::text, 'kind', i.kind, 'at', i.at,
                                         'session_id', i.session_id, 'execution_id', i.execution_id,
                                         'node', i.node, 'attributes', i.attributes) ORDER BY i.id)::text AS events
                         FROM ${inserted} i GROUP BY i.execution_id) AS g) AS p)`;
}

/** The events an announcement carries (in id order), and the id of the owner's event before them. */
export interface CarriedEvents {
  prev: number;
  events: EventRecord[];
}

/** A NOTIFY on the events channel, parsed: whose news it is, and the events when it carries them. */
export interface Announcement {
  stream: EventStream;
  ownerId: string;
  /** The newest event announced. */
  newest: number;
  /**
   * The events carried, parsed on the first call (null: none carried). Lazy: the listener looks
   * at every announcement of the database, and parses the JSON only of owners with subscribers.
   */
  carried(): CarriedEvents | null;
}

/**
 * Parses `<stream>:<owner id>:<newest id>[:<prev id>:<events JSON>]` (null for anything else).
 * Carried events are made the records the listings answer (`at` as the driver renders it).
 */
export function parseAnnouncement(payload: string): Announcement | null {
  const first = payload.indexOf(':');
  const second = payload.indexOf(':', first + 1);
  if (first < 0 || second < 0) return null;
  const stream = payload.slice(0, first);
  if (stream !== 'session' && stream !== 'execution') return null;
  const ownerId = payload.slice(first + 1, second);
  const third = payload.indexOf(':', second + 1);
  const newest = Number(payload.slice(second + 1, third < 0 ? undefined : third));
  if (!Number.isSafeInteger(newest)) return null;
  let parsed: CarriedEvents | null | undefined;
  const carried = (): CarriedEvents | null => {
    if (parsed !== undefined) return parsed;
    parsed = null;
    const fourth = third < 0 ? -1 : payload.indexOf(':', third + 1);
    const prev = Number(payload.slice(third + 1, fourth));
    if (fourth < 0 || !Number.isSafeInteger(prev)) return parsed;
    try {
      const rows = JSON.parse(payload.slice(fourth + 1)) as EventRecord[];
      const events = rows.map((row) => ({ ...row, id: String(row.id), at: new Date(row.at).toISOString() }));
      parsed = { prev, events };
    } catch {
      // An announcement the listener cannot use is read instead.
    }
    return parsed;
  };
  return { stream, ownerId, newest, carried };
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
