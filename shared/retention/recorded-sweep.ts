import type { Db, Queryable } from '../db/db.ts';
import { runRetentionSweep, type SweepCounts, type SweepOptions } from './sweep.ts';
import { DEFAULT_SWEEP_NICE, lowerBackendPriority, type BackendPriority } from './backend-priority.ts';
import { DEFAULT_SWEEP_DUTY_PERCENT } from './pacing.ts';

/**
 * The session advisory lock that serialises sweeps across every process sharing the database
 * (two-key form: `pg_try_advisory_lock(72190311, 11)`; the key pair appears in `pg_locks` as
 * classid/objid with objsubid 2). Exported so tests and operators can recognise or hold it.
 */
export const RETENTION_LOCK = [72_190_311, 11] as const;

/** What started a sweep. */
type SweepTrigger = 'daily' | 'ops';

/** `running` has no outcome yet; `abandoned` is a row left running by a process that died. */
type SweepStatus = 'running' | 'completed' | 'interrupted' | 'failed' | 'abandoned';

/** One row of the sweep history. */
export interface SweepRecord {
  id: string;
  trigger: SweepTrigger;
  status: SweepStatus;
  started_at: string;
  finished_at: string | null;
  executions_removed: number;
  runs_removed: number;
  idempotency_keys_removed: number;
  error: string | null;
}

/** A sweep ran (whatever its outcome: see `sweep.status`), or it did not and why. */
export type RecordedSweepResult =
  | {
      ran: true;
      sweep: SweepRecord;
      /** Whether the sweep's backend ran at a lower CPU priority (shared/retention/backend-priority.ts). */
      backend: BackendPriority;
      /** The duty cycle the sweep ran at. */
      dutyPercent: number;
    }
  | { ran: false; reason: 'in_progress' | 'not_due' };

export interface RecordedSweepOptions extends Pick<SweepOptions, 'now' | 'batchSize' | 'dutyPercent' | 'signal'> {
  trigger: SweepTrigger;
  /**
   * Run only when no sweep completed within this many seconds; checked under the lock, so of
   * several runners checking at once exactly one sweeps and the others find it done.
   */
  unlessCompletedWithinSeconds?: number;
  /**
   * `RETENTION_SWEEP_NICE`: the nice value of the sweep's backend when it is a process of this
   * host (0 leaves it alone). Default DEFAULT_SWEEP_NICE.
   */
  backendNice?: number;
}

/**
 * The duty cycle when none is set (`RETENTION_SWEEP_DUTY_PERCENT` unset): batches back to back
 * when the kernel already gives every other process of the server the cores first, half the
 * time otherwise.
 */
export function defaultDutyPercent(backend: Pick<BackendPriority, 'lowered'>): number {
  return backend.lowered ? 100 : DEFAULT_SWEEP_DUTY_PERCENT;
}

// A row is abandoned when it never finished and nobody holds the lock any more: a sweep inserts
// its row after taking the lock and finishes it before releasing, and the lock dies with its
// connection, so an unfinished row without a holder can only belong to a process that died.
const RECORD_COLUMNS = `
  id::text AS id, trigger, started_at, finished_at, executions_removed, runs_removed, idempotency_keys_removed, error,
  COALESCE(outcome, CASE WHEN EXISTS (
    SELECT 1 FROM pg_locks
     WHERE locktype = 'advisory' AND granted AND objsubid = 2
       AND classid = ${RETENTION_LOCK[0]} AND objid = ${RETENTION_LOCK[1]}
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  ) THEN 'running' ELSE 'abandoned' END) AS status`;

/**
 * Runs one retention sweep under the sweep lock and records it in `retention_sweeps`: the row is
 * written when the sweep starts and finished with its outcome and counts. When another process
 * holds the lock, nothing runs and `{ran: false, reason: 'in_progress'}` comes back at once.
 * The whole sweep runs on the connection holding the lock, so if that connection dies the sweep
 * stops with it and the lock is free for the next one. A sweep that throws is recorded as
 * `failed` (or `interrupted` when `signal` stopped it) with what it removed so far, then rethrown.
 */
export async function runRecordedSweep(db: Db, options: RecordedSweepOptions): Promise<RecordedSweepResult> {
  const client = await db.pool.connect();
  const q: Queryable = { query: (text, values) => client.query(text, values) };
  let locked = false;
  let backend: BackendPriority = { lowered: false, reason: 'no sweep ran' };
  try {
    const { rows: lock } = await q.query<{ locked: boolean }>(
      'SELECT pg_try_advisory_lock($1::int, $2::int) AS locked',
      [...RETENTION_LOCK],
    );
    locked = lock[0]!.locked;
    if (!locked) return { ran: false, reason: 'in_progress' };

    if (options.unlessCompletedWithinSeconds !== undefined) {
      const { rows } = await q.query(
        `SELECT 1 FROM retention_sweeps WHERE outcome = 'completed' AND started_at > now() - make_interval(secs => $1::int) LIMIT 1`,
        [options.unlessCompletedWithinSeconds],
      );
      if (rows.length > 0) return { ran: false, reason: 'not_due' };
    }

    backend = await lowerBackendPriority(client, options.backendNice ?? DEFAULT_SWEEP_NICE);
    const dutyPercent = options.dutyPercent ?? defaultDutyPercent(backend);
    const { rows: started } = await q.query<{ id: string }>(
      'INSERT INTO retention_sweeps (trigger) VALUES ($1::text) RETURNING id::text AS id',
      [options.trigger],
    );
    const id = started[0]!.id;
    let progress: SweepCounts = { executions_removed: 0, runs_removed: 0, idempotency_keys_removed: 0 };
    const finish = async (outcome: 'completed' | 'interrupted' | 'failed', error: string | null) => {
      const { rows } = await q.query<SweepRecord>(
        `UPDATE retention_sweeps SET finished_at = clock_timestamp(), outcome = $2::text, error = $3::text,
                executions_removed = $4::bigint, runs_removed = $5::bigint, idempotency_keys_removed = $6::bigint
          WHERE id = $1::bigint RETURNING ${RECORD_COLUMNS}`,
        [id, outcome, error, progress.executions_removed, progress.runs_removed, progress.idempotency_keys_removed],
      );
      return rows[0]!;
    };
    try {
      progress = await runRetentionSweep(q, {
        ...options,
        dutyPercent,
        onProgress: (counts) => {
          progress = counts;
        },
      });
    } catch (error) {
      const interrupted = options.signal?.aborted === true;
      await finish(
        interrupted ? 'interrupted' : 'failed',
        interrupted ? null : error instanceof Error ? error.message : String(error),
      ).catch(() => {});
      throw error;
    }
    return { ran: true, sweep: await finish('completed', null), backend, dutyPercent };
  } finally {
    // A connection that could not unlock goes back destroyed: returned to the pool still holding
    // the lock, it would make every later sweep find one in progress. So does one whose backend
    // was lowered: its priority cannot be raised back, and it would serve requests at it.
    let unlockError: Error | undefined;
    if (locked) {
      await q.query('SELECT pg_advisory_unlock($1::int, $2::int)', [...RETENTION_LOCK]).catch((error: unknown) => {
        unlockError = error instanceof Error ? error : new Error(String(error));
      });
    }
    client.release(unlockError ?? (backend.lowered ? true : undefined));
  }
}

/** The sweep history, newest first. */
export async function listSweeps(q: Queryable, limit: number): Promise<SweepRecord[]> {
  const { rows } = await q.query<SweepRecord>(
    `SELECT ${RECORD_COLUMNS} FROM retention_sweeps ORDER BY started_at DESC, id DESC LIMIT $1::int`,
    [limit],
  );
  return rows;
}
