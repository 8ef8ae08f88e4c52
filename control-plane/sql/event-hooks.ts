import type { Queryable } from '../../shared/db/db.ts';
import type { SealedSecret } from '../../shared/crypto/credential-cipher.ts';
import { tableListing, type RecordSource } from './table-listing.ts';

export interface EventHookRow {
  id: string;
  revision_id: string;
  session_id: string;
  url: string;
  events: string[];
  created_by: string;
  created_at: string;
}

// The sealed secret is never selected here: no listing or answer can carry it by mistake.
const COLUMNS = 'h.id, h.revision_id, h.session_id, h.url, h.events, h.created_by, h.created_at';

/** The event hook record (docs/webhooks.md, "Event hooks"): never its secret. */
export function eventHookRecord(row: EventHookRow): Record<string, unknown> {
  return {
    id: row.id,
    revision_id: row.revision_id,
    session_id: row.session_id,
    url: row.url,
    events: row.events,
    created_by: row.created_by,
    created_at: row.created_at,
  };
}

export interface NewEventHook {
  /** Chosen before sealing: the id is the cipher's associated data. */
  id: string;
  revisionId: string;
  sessionId: string;
  orgId: string;
  url: string;
  events: readonly string[];
  sealed: SealedSecret;
  createdBy: string;
}

export async function insertEventHook(q: Queryable, h: NewEventHook): Promise<EventHookRow> {
  const { rows } = await q.query<EventHookRow>(
    `INSERT INTO event_hooks AS h (id, revision_id, session_id, org_id, url, events, iv, auth_tag, ciphertext, created_by)
     VALUES ($1::uuid, $2::uuid, $3::uuid, $4::uuid, $5, $6::text[], $7::bytea, $8::bytea, $9::bytea, $10::uuid)
     RETURNING ${COLUMNS}`,
    [
      h.id,
      h.revisionId,
      h.sessionId,
      h.orgId,
      h.url,
      h.events,
      h.sealed.iv,
      h.sealed.authTag,
      h.sealed.ciphertext,
      h.createdBy,
    ],
  );
  return rows[0]!;
}

/** Event hooks a session holds (for the EVENT_HOOKS_PER_SESSION bound), its row locked by the caller. */
export async function countEventHooks(q: Queryable, sessionId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM event_hooks WHERE session_id = $1::uuid',
    [sessionId],
  );
  return rows[0]!.n;
}

/** The revision's event hook `id`, or undefined. */
export async function findEventHook(
  q: Queryable,
  revisionId: string,
  id: string,
  lock = false,
): Promise<EventHookRow | undefined> {
  const { rows } = await q.query<EventHookRow>(
    `SELECT ${COLUMNS} FROM event_hooks h WHERE h.id = $1::uuid AND h.revision_id = $2::uuid${lock ? ' FOR UPDATE' : ''}`,
    [id, revisionId],
  );
  return rows[0];
}

/** Deletes an event hook; its pending deliveries and its attempts go with it. */
export async function deleteEventHook(q: Queryable, id: string): Promise<EventHookRow | undefined> {
  const { rows } = await q.query<EventHookRow>(`DELETE FROM event_hooks h WHERE h.id = $1::uuid RETURNING ${COLUMNS}`, [
    id,
  ]);
  return rows[0];
}

/** A session's event hooks, newest first (record cursor). */
export function eventHookListing(q: Queryable, sessionId: string): RecordSource<EventHookRow> {
  return tableListing<EventHookRow>(q, {
    table: 'event_hooks',
    alias: 'h',
    columns: COLUMNS,
    scopeColumn: 'session_id',
    scopeId: sessionId,
  });
}

export interface HookAttemptRow {
  id: string;
  delivery_id: string;
  execution_id: string;
  event: string;
  attempt: number;
  outcome: 'delivered' | 'retrying' | 'failed';
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  created_at: string;
}

/** The attempt record (list_event_hook_attempts). */
export function hookAttemptRecord(row: HookAttemptRow): Record<string, unknown> {
  return {
    id: row.id,
    delivery_id: row.delivery_id,
    execution_id: row.execution_id,
    event: row.event,
    attempt: row.attempt,
    outcome: row.outcome,
    status_code: row.status_code,
    error: row.error,
    duration_ms: row.duration_ms,
    at: row.created_at,
  };
}

/** A hook's delivery attempts, newest first (record cursor). */
export function hookAttemptListing(q: Queryable, hookId: string): RecordSource<HookAttemptRow> {
  return tableListing<HookAttemptRow>(q, {
    table: 'hook_attempts',
    alias: 'a',
    columns:
      'a.id, a.delivery_id, a.execution_id, a.event, a.attempt, a.outcome, a.status_code, a.error, a.duration_ms, a.created_at',
    scopeColumn: 'hook_id',
    scopeId: hookId,
  });
}
