import type { Db } from '../shared/db/db.ts';
import { runRecordedSweep, type RecordedSweepResult } from '../shared/retention/recorded-sweep.ts';
import { startPeriodic } from '../shared/periodic.ts';

/** How often each runner asks whether a sweep is due. */
const RETENTION_CHECK_SECONDS = 10 * 60;
/**
 * A sweep is due when none completed within this long. With the check interval added, two
 * completed sweeps are at most 23 h 10 min apart while a runner is up, which keeps the
 * promise of docs/retention.md ("Timing: a daily sweep") that nothing outlives its retention by
 * more than a day.
 */
const RETENTION_DUE_AFTER_SECONDS = 23 * 60 * 60;

/** The part of a pino logger the timer uses. */
interface TimerLog {
  info(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface RetentionTimerOptions {
  log: TimerLog;
  /** Default `RETENTION_CHECK_SECONDS`. */
  checkEverySeconds?: number;
  /** Default `RETENTION_DUE_AFTER_SECONDS`. */
  dueAfterSeconds?: number;
  /**
   * `RETENTION_SWEEP_DUTY_PERCENT` (shared/retention/pacing.ts); unset: 100 when the sweep's
   * backend runs at a lower priority, else DEFAULT_SWEEP_DUTY_PERCENT (shared/retention/recorded-sweep.ts).
   */
  dutyPercent?: number;
  /** `RETENTION_SWEEP_NICE` (shared/retention/backend-priority.ts). */
  backendNice?: number;
}

export interface RetentionTimer {
  /**
   * Stops checking. A sweep in progress stops after its current batch (recorded `interrupted`,
   * with what it removed); resolves once it has.
   */
  stop(): Promise<void>;
}

/**
 * One check: sweeps when no sweep completed within `dueAfterSeconds` and no other process is
 * sweeping. Both conditions are decided under the sweep lock, so however many runners check at
 * the same moment, one sweeps and the others find it in progress or done.
 */
export function sweepIfDue(
  db: Db,
  options: { dueAfterSeconds?: number; dutyPercent?: number; backendNice?: number; signal?: AbortSignal } = {},
): Promise<RecordedSweepResult> {
  return runRecordedSweep(db, {
    trigger: 'daily',
    unlessCompletedWithinSeconds: options.dueAfterSeconds ?? RETENTION_DUE_AFTER_SECONDS,
    ...(options.dutyPercent === undefined ? {} : { dutyPercent: options.dutyPercent }),
    ...(options.backendNice === undefined ? {} : { backendNice: options.backendNice }),
    ...(options.signal ? { signal: options.signal } : {}),
  });
}

/**
 * Starts the daily retention sweep in a runner: a first check at once, then one every
 * `checkEverySeconds`, each scheduled after the previous finished (a long sweep never overlaps
 * the next check). Every runner starts one; the sweep lock and the history make the fleet sweep
 * once a day, not once per runner. A failed check is logged and retried at the next one.
 */
export function startRetentionTimer(db: Db, options: RetentionTimerOptions): RetentionTimer {
  const checkMs = (options.checkEverySeconds ?? RETENTION_CHECK_SECONDS) * 1000;
  const abort = new AbortController();

  const check = async () => {
    try {
      const result = await sweepIfDue(db, {
        dueAfterSeconds: options.dueAfterSeconds ?? RETENTION_DUE_AFTER_SECONDS,
        ...(options.dutyPercent === undefined ? {} : { dutyPercent: options.dutyPercent }),
        ...(options.backendNice === undefined ? {} : { backendNice: options.backendNice }),
        signal: abort.signal,
      });
      if (result.ran) {
        const { id, executions_removed, runs_removed, idempotency_keys_removed } = result.sweep;
        const backend = result.backend.lowered
          ? { backend_nice: result.backend.nice, backend_autogroup_nice: result.backend.autogroup }
          : { backend_priority: result.backend.reason };
        options.log.info(
          {
            sweep_id: id,
            executions_removed,
            runs_removed,
            idempotency_keys_removed,
            duty_percent: result.dutyPercent,
            ...backend,
          },
          'retention sweep completed',
        );
      }
    } catch (err) {
      // A stop in the middle of a sweep is not a failure: the history says `interrupted`.
      if (!abort.signal.aborted) options.log.error({ err }, 'retention sweep failed');
    }
  };
  const loop = startPeriodic(check, {
    everyMs: checkMs,
    firstMs: 0,
    onError: (err) => options.log.error({ err }, 'retention check failed'),
  });

  return {
    async stop() {
      abort.abort(new Error('the runner is stopping'));
      await loop.stop();
    },
  };
}
