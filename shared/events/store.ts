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

// Table and owner column per stream; both are constants, never request input.
const STREAMS = {
  session: { table: 'session_events', owner: 'session_id' },
  execution: { table: 'execution_events', owner: 'execution_id' },
} as const satisfies Record<EventStream, { table: string; owner: string }>;

/**
 * Up to `count` events of one session or execution with an id above `afterId`, in id order: a
 * keyset read, so rows inserted meanwhile are neither repeated nor shift the page.
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
      WHERE ${owner} = $1::uuid AND id > $2::bigint ORDER BY id LIMIT $3::int`,
    [ownerId, afterId, count],
  );
  return rows;
}

/** The id of the newest event of one session or execution (0 when it has none). */
export async function lastEventId(q: Queryable, stream: EventStream, ownerId: string): Promise<number> {
  const { table, owner } = STREAMS[stream];
  const { rows } = await q.query<{ id: number }>(
    `SELECT coalesce(max(id), 0)::bigint AS id FROM ${table} WHERE ${owner} = $1::uuid`,
    [ownerId],
  );
  return rows[0]!.id;
}
