import type { Queryable } from '../../shared/db/db.ts';
import type { Principal } from '../auth/principal.ts';

/** One audited request: who acted, with which credential, on what, and how it ended. */
export interface AuditEntry {
  id: number;
  at: string;
  request_id: string;
  actor_id: string;
  human_id: string | null;
  credential: Principal['credential'];
  api_key_id: string | null;
  operation: string;
  method: string;
  route: string;
  target_type: string | null;
  target_id: string | null;
  outcome: 'allowed' | 'refused';
  error: string | null;
  status: number;
}

export type NewAuditEntry = Omit<AuditEntry, 'id' | 'at'>;

const COLUMNS = `id, at, request_id, actor_id, human_id, credential, api_key_id, operation, method, route,
  target_type, target_id, outcome, error, status`;

/** Appends one entry. The log is append-only: nothing in the service updates or deletes rows. */
export async function recordAuditEntry(q: Queryable, entry: NewAuditEntry): Promise<void> {
  await q.query(
    `INSERT INTO audit_log (request_id, actor_id, human_id, credential, api_key_id, operation, method, route,
                            target_type, target_id, outcome, error, status)
     VALUES ($1, $2::uuid, $3::uuid, $4, $5::uuid, $6, $7, $8, $9, $10, $11, $12, $13::int)`,
    [
      entry.request_id,
      entry.actor_id,
      entry.human_id,
      entry.credential,
      entry.api_key_id,
      entry.operation,
      entry.method,
      entry.route,
      entry.target_type,
      entry.target_id,
      entry.outcome,
      entry.error,
      entry.status,
    ],
  );
}

export interface AuditFilter {
  /** Entries whose acting account (`actor_id`) is this user. */
  actorId?: string | undefined;
  /** Entries with this human behind them. */
  humanId?: string | undefined;
  operation?: string | undefined;
  /** Keyset pagination: only entries with an id below this one. */
  beforeId?: number | undefined;
  /** At most this many entries (1..1000, default 100). */
  limit?: number | undefined;
}

export const AUDIT_LIST_MAX = 1000;

/**
 * Reads the log newest first, for the operations API. Filters combine with AND; page on with
 * `beforeId` set to the last entry's id.
 */
export async function listAuditEntries(q: Queryable, filter: AuditFilter = {}): Promise<AuditEntry[]> {
  const limit = Math.min(Math.max(Math.trunc(filter.limit ?? 100), 1), AUDIT_LIST_MAX);
  const { rows } = await q.query<AuditEntry>(
    `SELECT ${COLUMNS} FROM audit_log
      WHERE ($1::uuid IS NULL OR actor_id = $1::uuid)
        AND ($2::uuid IS NULL OR human_id = $2::uuid)
        AND ($3::text IS NULL OR operation = $3::text)
        AND ($4::bigint IS NULL OR id < $4::bigint)
      ORDER BY id DESC
      LIMIT $5::int`,
    [filter.actorId ?? null, filter.humanId ?? null, filter.operation ?? null, filter.beforeId ?? null, limit],
  );
  return rows;
}
