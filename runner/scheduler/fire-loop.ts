/**
 * A runner's share of the scheduler (docs/scheduler.md): it takes `schedule-fires` jobs from
 * pg-boss as they fall due and fires each (shared/scheduler/fire.ts), any number of runners side
 * by side. A fire's job is sent only once the fire falls due within FIRE_HORIZON_SECONDS: a
 * promoter sends the jobs of the fires entering that window (every PROMOTE_SECONDS), so the queue
 * holds the next minute's fires, not one waiting job per schedule. A job is delayed to its due
 * time, which NOTIFY cannot announce, so the loop polls every half second and wakes itself at the
 * due times of the fires it sent or just scheduled. A reconciler re-sends the job of any enabled
 * schedule whose fire is overdue (a job pg-boss gave up on, a queue emptied by hand): the fire
 * itself decides, so a duplicate fires nothing.
 */
import type { Job, PgBoss } from 'pg-boss';
import type { Db } from '../../shared/db/db.ts';
import { isUuid } from '../../shared/ids.ts';
import { startPeriodic, type Periodic } from '../../shared/periodic.ts';
import { QUEUES } from '../../shared/queue/queues.ts';
import { FIRE_HORIZON_SECONDS, promoteFires, sendFireJob, type FireJobData } from '../../shared/scheduler/fire-jobs.ts';
import { fireSchedules } from '../../shared/scheduler/fire.ts';
import type { Tracing } from '../../shared/tracing/tracing.ts';

interface FireLoopLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface FireLoopOptions {
  db: Db;
  boss: PgBoss;
  log: FireLoopLog;
  /** Fire jobs fetched at once. Default 64. */
  batchSize?: number;
  /** Fire transactions in flight at once (each fires up to 32 schedules). Default 2. */
  concurrency?: number;
  /** How often the reconciler looks for overdue fires, seconds. Default 30. */
  reconcileSeconds?: number;
  /** How late a fire must be before the reconciler sends its job again, seconds. Default 60. */
  overdueSeconds?: number;
  /** A span per fire, whose traceparent the fired execution carries; null or absent: no spans. */
  tracing?: Tracing | null;
}

/** pg-boss's floor for polling. */
const POLL_SECONDS = 0.5;
/** Fires per transaction: a burst's round trips are per batch, not per fire. */
const FIRES_PER_TRANSACTION = 32;
/** Most local wake-up timers; later fires rely on the poll. */
const MAX_TIMERS = 1_000;
/** Overdue schedules re-sent per reconciler pass. */
const RECONCILE_BATCH = 1_000;
/**
 * How often the promoter sends the jobs of the fires entering the horizon (jittered by a quarter
 * either way): a fire enters it at least FIRE_HORIZON_SECONDS − 1.25 × this before it is due.
 */
const PROMOTE_SECONDS = 10;
/** Fires sent per promoter transaction; a full batch is followed by the next at once. */
const PROMOTE_BATCH = 1_000;

export class FireLoop {
  readonly #options: FireLoopOptions;
  #workerId: string | null = null;
  #reconciler: Periodic | null = null;
  #promoter: Periodic | null = null;
  readonly #timers = new Map<number, NodeJS.Timeout>();
  #stopping = false;

  constructor(options: FireLoopOptions) {
    this.#options = options;
  }

  async start(): Promise<void> {
    if (this.#workerId !== null || this.#stopping) return;
    this.#workerId = await this.#options.boss.work<FireJobData>(
      QUEUES.scheduleFires.name,
      {
        batchSize: this.#options.batchSize ?? 64,
        pollingIntervalSeconds: POLL_SECONDS,
        notifyPollingIntervalSeconds: POLL_SECONDS,
        burstWhenBatchFull: true,
      },
      (jobs) => this.#handle(jobs),
    );
    this.#promoter = startPeriodic(() => this.promote(), {
      everyMs: () => PROMOTE_SECONDS * 1000 * (0.75 + Math.random() / 2),
      firstMs: 0,
      onError: (err) => this.#options.log.warn({ err }, 'schedule promoter failed; retrying'),
    });
    const every = (this.#options.reconcileSeconds ?? 30) * 1000;
    this.#reconciler = startPeriodic(() => this.reconcile(), {
      everyMs: () => every * (0.75 + Math.random() / 2),
      onError: (err) => this.#options.log.warn({ err }, 'schedule reconciler failed; retrying'),
    });
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    await this.#promoter?.stop();
    await this.#reconciler?.stop();
    if (this.#workerId === null) return;
    this.#workerId = null;
    await this.#options.boss.offWork(QUEUES.scheduleFires.name, { wait: true });
  }

  /**
   * Sends the jobs of the fires that fall due within FIRE_HORIZON_SECONDS and have none yet, in
   * batches until none is left, and wakes this runner at their due times; returns how many it
   * sent. Runners promote side by side: each batch locks its rows and skips those another holds.
   */
  async promote(): Promise<number> {
    let sent = 0;
    for (;;) {
      const fires = await promoteFires(this.#options.db, this.#options.boss, PROMOTE_BATCH);
      for (const fire of fires) this.#wakeAt(fire.dueAt);
      sent += fires.length;
      if (fires.length < PROMOTE_BATCH || this.#stopping) return sent;
    }
  }

  /**
   * Sends again the job of every enabled schedule whose next fire is more than `overdueSeconds`
   * late; returns how many it sent. The fire decides under the row lock, so a job that was only
   * slow and this one together still fire once.
   */
  async reconcile(): Promise<number> {
    const overdue = this.#options.overdueSeconds ?? 60;
    const { rows } = await this.#options.db.query<{ id: string; next_fire_at: string }>(
      `SELECT id, next_fire_at FROM schedules
        WHERE enabled AND next_fire_at < now() - make_interval(secs => $1::int)
        ORDER BY next_fire_at LIMIT $2::int`,
      [overdue, RECONCILE_BATCH],
    );
    for (const row of rows) await sendFireJob(this.#options.boss, null, row.id, new Date(row.next_fire_at));
    if (rows.length > 0) this.#options.log.info({ schedules: rows.length }, 'overdue schedule fires sent again');
    return rows.length;
  }

  async #handle(jobs: Job<FireJobData>[]): Promise<void> {
    const { db, boss } = this.#options;
    const valid = jobs.filter(
      (job) =>
        typeof job.data?.schedule_id === 'string' &&
        isUuid(job.data.schedule_id) &&
        typeof job.data.due_at === 'string' &&
        !Number.isNaN(Date.parse(job.data.due_at)),
    );
    // A burst (every schedule due the same second) leaves in a few transactions, side by side.
    const chunks: Job<FireJobData>[][] = [];
    for (let i = 0; i < valid.length; i += FIRES_PER_TRANSACTION)
      chunks.push(valid.slice(i, i + FIRES_PER_TRANSACTION));
    let failure: unknown;
    const worker = async () => {
      for (let chunk = chunks.shift(); chunk !== undefined; chunk = chunks.shift()) {
        try {
          const outcomes = await fireSchedules(
            db,
            boss,
            chunk.map((job) => ({ scheduleId: job.data.schedule_id, dueAt: job.data.due_at })),
            this.#options.tracing ?? null,
          );
          // Only the next fires whose job was sent (within the horizon); the promoter wakes the rest.
          const horizon = Date.now() + FIRE_HORIZON_SECONDS * 1000;
          for (const outcome of outcomes)
            if ('fired' in outcome && outcome.next !== null && outcome.next.getTime() < horizon)
              this.#wakeAt(outcome.next);
        } catch (error) {
          failure ??= error;
        }
      }
    };
    const concurrency = Math.max(1, this.#options.concurrency ?? 2);
    await Promise.all(Array.from({ length: Math.min(concurrency, chunks.length) }, worker));
    // pg-boss offers the whole batch again; the fires that happened find their due time gone.
    if (failure !== undefined) throw failure;
  }

  /** Fetches at `at` instead of at the next poll (a fire this runner scheduled falls due). */
  #wakeAt(at: Date): void {
    if (this.#stopping || this.#timers.size >= MAX_TIMERS) return;
    const bucket = Math.ceil(at.getTime() / 100) * 100;
    if (this.#timers.has(bucket)) return;
    const timer = setTimeout(
      () => {
        this.#timers.delete(bucket);
        if (this.#workerId !== null && !this.#stopping) this.#options.boss.notifyWorker(this.#workerId);
      },
      Math.max(0, bucket - Date.now() + 5),
    );
    timer.unref();
    this.#timers.set(bucket, timer);
  }
}
