import type { Queryable } from '../db/db.ts';
import { sweepIdempotencyKeys } from './idempotency-keys.ts';
import { limitById, resolveLimit, type OverrideMap, type OverrideSet } from '../limits/index.ts';
import { DEFAULT_SWEEP_DUTY_PERCENT, pacedBatches, type Batching } from './pacing.ts';

/** What one sweep removed. */
export interface SweepCounts {
  executions_removed: number;
  runs_removed: number;
  /** Idempotency keys past their 24 hours (shared/retention/idempotency-keys.ts). */
  idempotency_keys_removed: number;
}

export interface SweepOptions {
  /** The instant ages are measured from; the database's clock when left out. */
  now?: Date;
  /** Executions examined per statement (each its own short transaction). Default 500. */
  batchSize?: number;
  /**
   * The share of the sweep's time spent in its statements, in percent (`RETENTION_SWEEP_DUTY_PERCENT`,
   * default 50): after a batch that took t ms the sweep pauses t × (100 − duty) / duty ms. 100:
   * batches back to back.
   */
  dutyPercent?: number;
  /** Hears each pause between batches (ms). */
  onPause?: (ms: number) => void;
  /** Checked between batches and during pauses: an aborted sweep throws the signal's reason, keeping what it removed. */
  signal?: AbortSignal;
  /** Hears the running totals after every batch, so a sweep that fails midway can still report them. */
  onProgress?: (counts: SweepCounts) => void;
}

const EXECUTION_RETENTION = 'workflow.execution_retention_days';
const RUN_RETENTION = 'scheduler.run_retention_days';
const DEFAULT_BATCH = 500;
/** A retention day is 86,400 seconds (no calendar arithmetic, so DST never moves a cutoff). */
const DAY_MS = 86_400_000;

/** A blob whose retention differs from the catalog default, or may: `days` null = kept forever. */
interface BlobRetention {
  blobId: string;
  days: number | null;
}

// The blobs an override of the retention limit can reach, each with the overrides of its chain
// (its owner's, its organization's and its own) as `{level: value}`; JSON null is a real value
// (kept forever), so an absent level is an absent key. Ownership is joined now, as every request
// does (docs/limits.md, "What each operation checks"). Every other blob has the default.
// The scan starts from the overrides of this one limit (limit_overrides_limit_idx), never from
// executions, so its cost is the number of overridden targets and the blobs under them.
const RETENTION_OVERRIDES_SQL = `
  WITH targets AS (
    SELECT target_type, target_id FROM limit_overrides WHERE limit_id = $1::text
  ), reached AS (
    SELECT b.id FROM blobs b JOIN targets t ON t.target_type = 'blob' AND t.target_id = b.id
    UNION
    SELECT b.id FROM blobs b JOIN targets t ON t.target_type = 'org' AND t.target_id = b.org_id
    UNION
    SELECT b.id FROM blobs b JOIN orgs o ON o.id = b.org_id JOIN targets t ON t.target_type = 'user' AND t.target_id = o.owner_id
  )
  SELECT b.id AS blob_id,
         (SELECT jsonb_object_agg(ov.target_type, ov.value)
            FROM (VALUES ('user', o.owner_id), ('org', b.org_id), ('blob', b.id)) AS l (target_type, target_id)
            JOIN limit_overrides ov ON ov.target_type = l.target_type AND ov.target_id = l.target_id AND ov.limit_id = $1::text
         ) AS overrides
    FROM reached r JOIN blobs b ON b.id = r.id JOIN orgs o ON o.id = b.org_id`;

// One batch: the next `$6` finished executions in (ended_at, id) order that are older than the
// widest cutoff (`$2`, the shortest retention in force anywhere), read from the retention index
// after the previous batch's last row, so every finished execution is read at most once per
// sweep however many of them are kept. Of those, the ones past their own blob's retention are
// deleted; their execution events, re-run links and session counts follow by statement-level
// triggers (migrations 033, 041). Running executions have ended_at NULL and never enter the scan.
// The blob is the session's (a session's limits, and those of every execution in it, come from
// the session's blob: docs/limits.md, "How the value in force is chosen"), which every create
// stores on the execution row (`blob_id`); only a row written without it (before migration 010)
// is looked up through its session's revision, by primary keys. `$4`/`$5` list the blobs with
// their own retention (NULL days: forever); all other blobs use the default `$3`. The cursor
// comes back as text: a timestamptz parsed into a JS Date would lose its microseconds and skip or
// repeat rows.
const SWEEP_BATCH_SQL = `
  WITH scanned AS (
    SELECT e.id, e.ended_at,
           coalesce(e.blob_id, (SELECT r.blob_id FROM sessions s JOIN revisions r ON r.id = s.revision_id
                                 WHERE s.id = e.session_id)) AS blob_id
      FROM executions e
     WHERE e.ended_at IS NOT NULL AND e.ended_at < $2::timestamptz
       AND e.ended_at >= $7::timestamptz AND (e.ended_at, e.id) > ($7::timestamptz, $8::uuid)
     ORDER BY e.ended_at, e.id
     LIMIT $6::int
  ), due AS (
    SELECT sc.id
      FROM scanned sc
      LEFT JOIN unnest($4::uuid[], $5::int[]) AS p (blob_id, days) ON p.blob_id = sc.blob_id
     WHERE CASE
             WHEN p.blob_id IS NULL THEN sc.ended_at < $1::timestamptz - make_interval(secs => $3::int * 86400.0)
             WHEN p.days IS NULL THEN false
             ELSE sc.ended_at < $1::timestamptz - make_interval(secs => p.days * 86400.0)
           END
  ), removed AS (
    DELETE FROM executions e USING due WHERE e.id = due.id RETURNING e.id
  ), last AS (
    SELECT ended_at, id FROM scanned ORDER BY ended_at DESC, id DESC LIMIT 1
  )
  SELECT (SELECT count(*) FROM scanned)::int AS scanned,
         (SELECT count(*) FROM removed)::int AS removed,
         (SELECT ended_at::text FROM last) AS last_ended_at,
         (SELECT id FROM last) AS last_id`;

interface BatchRow {
  scanned: number;
  removed: number;
  last_ended_at: string | null;
  last_id: string | null;
}

type RetentionLimit = typeof EXECUTION_RETENTION | typeof RUN_RETENTION;

/** Every blob that an override of `limitId` reaches, with its retention in force now. */
async function overriddenRetentions(q: Queryable, limitId: RetentionLimit): Promise<BlobRetention[]> {
  const { rows } = await q.query<{ blob_id: string; overrides: Record<string, unknown> | null }>(
    RETENTION_OVERRIDES_SQL,
    [limitId],
  );
  return rows.map((row) => {
    const levels = row.overrides ?? {};
    const set: { -readonly [L in keyof OverrideSet]: OverrideMap } = {};
    for (const level of ['user', 'org', 'blob'] as const) {
      if (Object.hasOwn(levels, level)) set[level] = { [limitId]: levels[level] };
    }
    // resolveLimit re-validates each stored value, so an invalid one is skipped exactly as a
    // request would skip it, and the value kept is the one Get Blob Limits shows.
    return { blobId: row.blob_id, days: resolveLimit(limitId, set).value as number | null };
  });
}

/**
 * Removes the finished executions, with their events and data, that are past the
 * `workflow.execution_retention_days` in force for their session's blob at the time of the sweep
 * (an override of `null` keeps them forever), schedule runs past `scheduler.run_retention_days`,
 * and idempotency keys older than 24 hours.
 * Removing an execution frees its slot in `workflow.executions_per_session` (the quota counts rows).
 * Running, queued and sleeping executions, sessions and definitions are never touched.
 *
 * Set-based: one query resolves the retention of every blob an override reaches, then batches of
 * `batchSize` executions are examined and deleted, each batch one statement in its own
 * transaction, so the sweep never holds locks for long and can stop between batches. It does not
 * serialise itself against another sweep: callers go through `runRecordedSweep`, which does.
 */
export async function runRetentionSweep(q: Queryable, options: SweepOptions = {}): Promise<SweepCounts> {
  const batchSize = options.batchSize ?? DEFAULT_BATCH;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new RangeError('batchSize must be a positive integer');
  const now = options.now ?? new Date((await q.query<{ now: string }>('SELECT now() AS now')).rows[0]!.now);
  const counts: SweepCounts = { executions_removed: 0, runs_removed: 0, idempotency_keys_removed: 0 };

  const dutyPercent = options.dutyPercent ?? DEFAULT_SWEEP_DUTY_PERCENT;
  if (!(dutyPercent > 0 && dutyPercent <= 100)) throw new RangeError('dutyPercent must be in (0, 100]');
  const batching = { batchSize, signal: options.signal, dutyPercent, onPause: options.onPause };
  await sweepBatches(q, EXECUTION_RETENTION, SWEEP_BATCH_SQL, now, batching, (removed) => {
    counts.executions_removed += removed;
    options.onProgress?.({ ...counts });
  });
  await sweepBatches(q, RUN_RETENTION, RUNS_BATCH_SQL, now, batching, (removed) => {
    counts.runs_removed += removed;
    options.onProgress?.({ ...counts });
  });
  await sweepIdempotencyKeys(q, now, batching, (removed) => {
    counts.idempotency_keys_removed += removed;
    options.onProgress?.({ ...counts });
  });
  return counts;
}

// One batch of schedule runs, as SWEEP_BATCH_SQL does for executions: the next `$6` runs in
// (fired_at, id) order older than the widest cutoff, of which those past the retention of their
// own blob — the scheduler blob holding the schedule — are deleted.
const RUNS_BATCH_SQL = `
  WITH scanned AS (
    SELECT sr.id, sr.schedule_id, sr.fired_at
      FROM schedule_runs sr
     WHERE sr.fired_at < $2::timestamptz
       AND sr.fired_at >= $7::timestamptz AND (sr.fired_at, sr.id) > ($7::timestamptz, $8::uuid)
     ORDER BY sr.fired_at, sr.id
     LIMIT $6::int
  ), due AS (
    SELECT x.id
      FROM scanned x
      JOIN schedules sc ON sc.id = x.schedule_id
      JOIN revisions r ON r.id = sc.revision_id
      LEFT JOIN unnest($4::uuid[], $5::int[]) AS p (blob_id, days) ON p.blob_id = r.blob_id
     WHERE CASE
             WHEN p.blob_id IS NULL THEN x.fired_at < $1::timestamptz - make_interval(secs => $3::int * 86400.0)
             WHEN p.days IS NULL THEN false
             ELSE x.fired_at < $1::timestamptz - make_interval(secs => p.days * 86400.0)
           END
  ), removed AS (
    DELETE FROM schedule_runs sr USING due WHERE sr.id = due.id RETURNING sr.id
  ), last AS (
    SELECT fired_at, id FROM scanned ORDER BY fired_at DESC, id DESC LIMIT 1
  )
  SELECT (SELECT count(*) FROM scanned)::int AS scanned,
         (SELECT count(*) FROM removed)::int AS removed,
         (SELECT fired_at::text FROM last) AS last_ended_at,
         (SELECT id FROM last) AS last_id`;

/**
 * Removes, batch by batch, the rows `batchSql` examines that are past `limitId` of their own
 * blob: finished executions (SWEEP_BATCH_SQL) or schedule runs (RUNS_BATCH_SQL), whose statements
 * take the same parameters. One query first resolves the retention of every blob an override
 * reaches; each batch is then one statement in its own transaction, read from the index after the
 * previous batch's last row, so the sweep never holds locks for long and can stop between batches.
 */
async function sweepBatches(
  q: Queryable,
  limitId: RetentionLimit,
  batchSql: string,
  now: Date,
  options: Batching,
  onBatch: (removed: number) => void,
): Promise<void> {
  const defaultDays = limitById(limitId).default as number;
  const overridden = await overriddenRetentions(q, limitId);
  let shortest = defaultDays;
  for (const { days } of overridden) if (days !== null && days < shortest) shortest = days;
  const widestCutoff = new Date(now.getTime() - shortest * DAY_MS);
  const blobIds = overridden.map((b) => b.blobId);
  const days = overridden.map((b) => b.days);
  // The first batch starts before every row; each next one after the last row the previous read.
  let after = { at: '-infinity', id: '00000000-0000-0000-0000-000000000000' };
  await pacedBatches(async () => {
    const { rows } = await q.query<BatchRow>(batchSql, [
      now,
      widestCutoff,
      defaultDays,
      blobIds,
      days,
      options.batchSize,
      after.at,
      after.id,
    ]);
    const batch = rows[0]!;
    onBatch(batch.removed);
    if (batch.scanned < options.batchSize || batch.last_ended_at === null || batch.last_id === null)
      return { last: true };
    after = { at: batch.last_ended_at, id: batch.last_id };
    return { last: false };
  }, options);
}
