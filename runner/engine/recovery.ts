/**
 * The recovery sweep: finds unfinished executions that nobody works on and nothing will wake, and
 * sends each a new wake-up. That is how a crash is recovered: the dead runner's lease runs out,
 * the sweep notices the execution has no pending job, and the next claim (by any runner) resumes
 * it from the last persisted node, counting one more attempt. After `maxRecoveries` such
 * takeovers without progress the claim ends it failed (runner/engine/interpreter.ts): a poison
 * execution that kills its runners cannot crash-loop them.
 *
 * Candidates are unfinished, unleased (or the lease expired) and due, with no job pending for
 * them in pg-boss. Executions without a holder get `orphanSeconds` of grace first, so a wake-up
 * that a busy runner fetched but has not claimed yet is not doubled. Doubled wake-ups are harmless
 * anyway (a claim takes an execution once). Every runner sweeps; an advisory lock lets one sweep
 * at a time.
 *
 * Under the same lock the sweep compacts the end counts behind
 * `workflow.running_executions_per_org` (migration 015): the rows of closed database connections
 * are folded into their organization's, so reading the count stays a few rows.
 */
import type { Db } from '../../shared/db/db.ts';
import { enqueueExecution, type JobQueue } from '../../shared/queue/execution-jobs.ts';
import { QUEUES } from '../../shared/queue/queues.ts';
import { startPeriodic, type Periodic } from '../../shared/periodic.ts';

export interface RecoveryOptions {
  db: Db;
  queue: JobQueue;
  /** Seconds between sweeps (each runner; jittered). */
  sweepSeconds: number;
  /** Grace before an unheld execution with no pending job gets a new wake-up. */
  orphanSeconds: number;
  onError: (error: unknown) => void;
  /** Told of every execution that got a new wake-up. */
  onRecovered?: (executionIds: string[]) => void;
}

/** Most executions one sweep wakes (the next sweep continues). */
const SWEEP_BATCH = 200;
/** pg_try_advisory_xact_lock key of the sweep ("recovery" in ASCII, as an int8). */
const SWEEP_LOCK = 0x7265636f76657279n;

export class RecoverySweep {
  readonly #options: RecoveryOptions;
  #loop: Periodic | undefined;

  constructor(options: RecoveryOptions) {
    this.#options = options;
  }

  start(): void {
    // ±20 % jitter keeps the runners of a fleet from sweeping in step.
    const everyMs = () => this.#options.sweepSeconds * 1000 * (0.8 + Math.random() * 0.4);
    this.#loop ??= startPeriodic(() => this.sweep(), { everyMs, onError: this.#options.onError });
  }

  async stop(): Promise<void> {
    await this.#loop?.stop();
    this.#loop = undefined;
  }

  /** One sweep: sends a wake-up to every stranded execution found; returns how many. */
  async sweep(): Promise<number> {
    const ids = await this.#options.db.transaction(async (tx) => {
      const {
        rows: [lock],
      } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS locked', [
        SWEEP_LOCK.toString(),
      ]);
      if (!lock?.locked) return [];
      await tx.query('SELECT compact_execution_ends()');
      const { rows } = await tx.query<{ id: string }>(
        `SELECT e.id FROM executions e
          WHERE e.ended_at IS NULL
            AND (e.lease_until IS NULL OR e.lease_until < now())
            AND (e.wake_at IS NULL OR e.wake_at <= now())
            AND (e.lease_owner IS NOT NULL
                 OR greatest(e.created_at, e.lease_until, e.wake_at) < now() - make_interval(secs => $1::int))
            AND NOT EXISTS (
              SELECT 1 FROM pgboss.job j
               WHERE j.name = $2 AND j.data->>'execution_id' = e.id::text
                 AND (j.state IN ('created', 'retry')
                      OR (j.state = 'active' AND j.started_on > now() - make_interval(secs => $1::int))))
          ORDER BY greatest(e.created_at, e.lease_until, e.wake_at)
          LIMIT $3::int`,
        [this.#options.orphanSeconds, QUEUES.executions.name, SWEEP_BATCH],
      );
      for (const row of rows) await enqueueExecution(this.#options.queue, tx, row.id);
      return rows.map((row) => row.id);
    });
    if (ids.length > 0) this.#options.onRecovered?.(ids);
    return ids.length;
  }
}
