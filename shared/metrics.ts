/**
 * Prometheus metrics every process exposes (docs/operations.md, "Metrics"), on prom-client's
 * default registry of the process (a worker thread has its own, which it posts to its runner:
 * runner/metrics.ts). Label values are bounded sets — routes, methods, processors, statuses,
 * queue names — never ids.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, register } from 'prom-client';
import type pg from 'pg';
import type { Queryable } from './db/db.ts';

export const executionsCreated = new Counter({
  name: 'workspace_executions_created_total',
  help: 'Executions created, by source (api: create_execution; schedule: a schedule fire).',
  labelNames: ['source'],
});

export const scheduleFireLag = new Histogram({
  name: 'workspace_schedule_fire_lag_seconds',
  help: "A schedule's due time to the transaction that fired it (created its execution or recorded the refusal).",
  buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
});

let started = false;

/** Process metrics (CPU, memory, event loop lag, GC, handles) under their standard names; once per process. */
export function startProcessMetrics(): void {
  if (started) return;
  started = true;
  collectDefaultMetrics();
}

const pools = new Set<pg.Pool>();

new Gauge({
  name: 'workspace_db_pool_connections',
  help: "Connections of this process's PostgreSQL pools, by state (in_use, idle), and requests waiting for one (waiting).",
  labelNames: ['state'],
  collect() {
    let total = 0;
    let idle = 0;
    let waiting = 0;
    for (const pool of pools) {
      total += pool.totalCount;
      idle += pool.idleCount;
      waiting += pool.waitingCount;
    }
    this.set({ state: 'in_use' }, total - idle);
    this.set({ state: 'idle' }, idle);
    this.set({ state: 'waiting' }, waiting);
  },
});

/** Counts `pool` in workspace_db_pool_connections until `forget` is called (its close). */
export function watchPool(pool: pg.Pool): () => void {
  pools.add(pool);
  return () => pools.delete(pool);
}

/** Read at most this often: the count scans the job table. */
const QUEUE_READ_EVERY_MS = 15_000;
let queueSource: Queryable | null = null;
let queueRead: { at: number; rows: QueueRow[] } | null = null;

type QueueRow = { name: string; ready: number; active: number; oldest: number | null };
let queueReading: Promise<QueueRow[]> | null = null;

/** The queue counts, read at most every QUEUE_READ_EVERY_MS and once for both gauges of a scrape. */
function queueRows(): Promise<QueueRow[]> {
  if (queueSource === null) return Promise.resolve([]);
  if (queueRead !== null && Date.now() - queueRead.at <= QUEUE_READ_EVERY_MS) return Promise.resolve(queueRead.rows);
  const source = queueSource;
  queueReading ??= source
    .query<QueueRow>(
      `SELECT name,
            count(*) FILTER (WHERE state = 'created' AND start_after <= now())::int AS ready,
            count(*) FILTER (WHERE state = 'active')::int AS active,
            extract(epoch FROM now() - min(created_on) FILTER (WHERE state = 'created' AND start_after <= now()))::float8 AS oldest
       FROM pgboss.job GROUP BY name`,
    )
    .then(({ rows }) => {
      queueRead = { at: Date.now(), rows };
      return rows;
    })
    .finally(() => {
      queueReading = null;
    });
  return queueReading;
}

new Gauge({
  name: 'workspace_queue_jobs',
  help: 'pg-boss jobs by queue and state (ready: due and waiting for a worker; active: being worked), read at most every 15 s.',
  labelNames: ['queue', 'state'],
  async collect() {
    for (const row of await queueRows().catch(() => [])) {
      this.set({ queue: row.name, state: 'ready' }, row.ready);
      this.set({ queue: row.name, state: 'active' }, row.active);
    }
  },
});

new Gauge({
  name: 'workspace_queue_oldest_ready_job_age_seconds',
  help: 'Age of the oldest job due and not yet taken, by queue (0 when none), read at most every 15 s.',
  labelNames: ['queue'],
  async collect() {
    for (const row of await queueRows().catch(() => [])) this.set({ queue: row.name }, row.oldest ?? 0);
  },
});

/** Reads queue depth through `db` (the control plane's: one process per deployment is enough, but any may). */
export function watchQueues(db: Queryable): void {
  queueSource = db;
}

/** The exposition text and its content type. */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: register.contentType, body: await register.metrics() };
}
