import type { Queryable } from '../../shared/db/db.ts';

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

interface EventRow {
  id: number;
  kind: string;
  at: string;
  session_id: string;
  execution_id: string | null;
  node: string | null;
  attributes: Record<string, unknown>;
}

/** Contract §4 event record; ids are strings so clients never depend on their numeric form. */
export function eventRecord(row: EventRow): EventRecord {
  return { id: String(row.id), kind: row.kind, at: row.at, session_id: row.session_id, execution_id: row.execution_id, node: row.node, attributes: row.attributes };
}

/**
 * Appends a session event in the caller's transaction and announces it with NOTIFY, which
 * PostgreSQL delivers only if the transaction commits, so subscribers never see a rolled-back event.
 */
export async function appendSessionEvent(q: Queryable, event: NewEvent): Promise<EventRecord> {
  const { rows } = await q.query<EventRow>(
    `WITH e AS (
       INSERT INTO session_events (session_id, execution_id, kind, node, attributes)
       VALUES ($1::uuid, $2::uuid, $3, $4, $5::jsonb)
       RETURNING id, kind, at, session_id, execution_id, node, attributes)
     SELECT e.*, pg_notify($6, 'session:' || e.session_id || ':' || e.id) FROM e`,
    [event.sessionId, event.executionId ?? null, event.kind, event.node ?? null, JSON.stringify(event.attributes ?? {}), EVENTS_CHANNEL],
  );
  return eventRecord(rows[0]!);
}

/** Appends an execution event (same transaction and NOTIFY rules as session events). */
export async function appendExecutionEvent(q: Queryable, event: NewEvent & { executionId: string }): Promise<EventRecord> {
  const { rows } = await q.query<EventRow>(
    `WITH e AS (
       INSERT INTO execution_events (execution_id, session_id, kind, node, attributes)
       VALUES ($1::uuid, $2::uuid, $3, $4, $5::jsonb)
       RETURNING id, kind, at, session_id, execution_id, node, attributes)
     SELECT e.*, pg_notify($6, 'execution:' || e.execution_id || ':' || e.id) FROM e`,
    [event.executionId, event.sessionId, event.kind, event.node ?? null, JSON.stringify(event.attributes ?? {}), EVENTS_CHANNEL],
  );
  return eventRecord(rows[0]!);
}
