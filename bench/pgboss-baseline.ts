/**
 * The floor under the engine's figures: bare pg-boss on the same database, configured as the
 * runners use it (`useListenNotify: true`, a `notify: true` queue in the shared job table), with a
 * handler that does nothing. Our overhead is the engine's figure divided by this one.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PgBoss } from 'pg-boss';
import type pg from 'pg';
import { summarize, type Summary } from './stats.ts';

const QUEUE = 'bench-baseline';

export interface BaselineOptions {
  /** Sends measured one at a time for the latency figure. */
  latencySamples: number;
  /** Gap between those sends: a moderate rate, not saturation. */
  gapMs: number;
  /** Jobs in the backlog the throughput figure drains. */
  backlog: number;
  /** Jobs fetched (and completed) per round trip. */
  batchSize: number;
}

export interface BaselineResult {
  /** send() called → handler entered, per job (ms). */
  latency: Summary;
  /** Jobs handed to the handler and completed per second, draining the backlog. */
  jobsPerSecond: number;
}

/** Measures pg-boss's send→handler latency and batch throughput on `databaseUrl`; cleans up its queue. */
export async function pgbossBaseline(
  databaseUrl: string,
  sql: pg.Pool,
  options: BaselineOptions,
): Promise<BaselineResult> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    application_name: 'workspace-bench-baseline',
    max: 5,
    useListenNotify: true,
    supervise: false,
    schedule: false,
  });
  boss.on('error', () => {});
  await boss.start();
  try {
    await boss.createQueue(QUEUE, { notify: true });
    return { latency: await latency(boss, options), jobsPerSecond: await throughput(boss, sql, options) };
  } finally {
    await boss.offWork(QUEUE).catch(() => {});
    await boss.deleteQueue(QUEUE).catch(() => {});
    await boss.stop({ graceful: false });
  }
}

async function latency(boss: PgBoss, options: BaselineOptions): Promise<Summary> {
  const sentAt = new Map<number, number>();
  const samples: number[] = [];
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => (done = resolve));
  await boss.work<{ seq: number }>(QUEUE, { batchSize: 1 }, async ([job]) => {
    const at = performance.now();
    const sent = sentAt.get(job!.data.seq);
    if (sent !== undefined) samples.push(at - sent);
    if (samples.length === options.latencySamples) done();
  });
  // The worker's first fetch finds nothing; give its listener a moment before measuring.
  await sleep(500);
  for (let seq = 0; seq < options.latencySamples; seq++) {
    sentAt.set(seq, performance.now());
    await boss.send(QUEUE, { seq });
    await sleep(options.gapMs);
  }
  await Promise.race([all, sleep(30_000)]);
  await boss.offWork(QUEUE);
  if (samples.length < options.latencySamples)
    throw new Error(`pg-boss baseline: ${samples.length} of ${options.latencySamples} jobs arrived`);
  return summarize(samples);
}

async function throughput(boss: PgBoss, sql: pg.Pool, options: BaselineOptions): Promise<number> {
  for (let sent = 0; sent < options.backlog; sent += 1000) {
    const jobs = Array.from({ length: Math.min(1000, options.backlog - sent) }, (_, i) => ({
      data: { seq: sent + i },
    }));
    await boss.insert(QUEUE, jobs);
  }
  // pg-boss's fetch plan depends on fresh statistics (measured: 13,200 jobs/s analyzed vs 521/s stale).
  await sql.query('ANALYZE pgboss.job');
  let received = 0;
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => (done = resolve));
  const started = performance.now();
  let finished = started;
  await boss.work(QUEUE, { batchSize: options.batchSize, burstWhenBatchFull: true }, async (jobs) => {
    received += jobs.length;
    if (received >= options.backlog) {
      finished = performance.now();
      done();
    }
  });
  await Promise.race([all, sleep(60_000)]);
  if (received < options.backlog)
    throw new Error(`pg-boss baseline: drained ${received} of ${options.backlog} jobs in 60 s`);
  return options.backlog / ((finished - started) / 1000);
}
