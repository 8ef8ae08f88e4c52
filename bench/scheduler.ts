/**
 * The scheduler (docs/benchmarks.md, "Scheduler"), on a system of its own with one runner at its
 * defaults. Prints, asserts nothing:
 *
 * - create_schedule: latency of the 10,000 creates below, and of mixed expressions in zones with
 *   clock changes (`0 0 29 2 *`, `*\/5 * * * *` in London...), whose shortest gap takes longest;
 * - fires: 10,000 enabled schedules, each firing every minute at its own second (`S * * * * *`),
 *   into a three-node workflow; over whole minutes, fires counted against expected (exact: no
 *   duplicate, none missing), fire lag (due time → execution created) p50/p99/max;
 * - CPU: the runner's and PostgreSQL's CPU while the schedules fire (the fired executions run
 *   too), beside the same rate of executions created by a client instead, and per execution.
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/scheduler.ts [--schedules 10000 --minutes 2]
 * `npm run bench` runs it after the engine's sections (`--scheduler-only` runs only it).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import '../shared/db/embedded.ts';
import { command, connectRpc, createExecution, createWorkload, setOverride } from './client.ts';
import { cpuSnapshot, cpuSpent, postmasterPid } from './cpu.ts';
import { fmt, summarize, table } from './stats.ts';
import { BENCH_GRAPH } from './workflow.ts';
import { runSection, type System } from './system.ts';

const { values: args } = parseArgs({
  options: {
    schedules: { type: 'string', default: '10000' },
    minutes: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '16' },
  },
});
const SCHEDULES = Number(args.schedules);
const MINUTES = Math.max(1, Number(args.minutes));
const CONCURRENCY = Number(args.concurrency);

const log = (message: string) => process.stderr.write(`[bench scheduler] ${message}\n`);

/** Expressions whose shortest gap is the most work: sparse days, clock changes, nth weekdays. */
const MIXED: Array<[string, string]> = [
  ['0 0 29 2 *', 'UTC'],
  ['0 0 29 2 *', 'Europe/Paris'],
  ['*/5 * * * *', 'Europe/London'],
  ['30 1 * * *', 'America/New_York'],
  ['0 9 * * 1-5', 'Europe/Berlin'],
  ['0 0 * * 1#2', 'Australia/Lord_Howe'],
  ['0 0 L * *', 'America/Sao_Paulo'],
  ['15 2 1,15 * *', 'America/Chicago'],
  ['0 12 1 3,4 *', 'America/New_York'],
  ['0 0 1 1 *', 'Pacific/Chatham'],
];

async function pool<T>(count: number, concurrency: number, task: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < count; i = next++) results[i] = await task(i);
    }),
  );
  return results;
}

async function main(system: System): Promise<string> {
  const work = await createWorkload(system, BENCH_GRAPH, { sessions: 10, quota: 1_000_000_000 });
  const { account, orgId } = work;
  const created = (await fetch(`${system.apiUrl}/v1/blobs/${orgId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${account.token}` },
    body: JSON.stringify({ type: 'svc.compute.scheduler', alias: `bench-scheduler-${Date.now().toString(36)}` }),
  }).then((r) => r.json())) as any;
  if (created.status !== 'success') throw new Error(`creating the scheduler blob: ${JSON.stringify(created)}`);
  const schedulerRev: string = created.revision.id;
  await setOverride(
    system,
    'scheduler.schedules_per_revision',
    'blob',
    created.blob.id,
    SCHEDULES + MIXED.length * 20 + 210,
  );

  log(`creating ${SCHEDULES} schedules (${CONCURRENCY} at a time)`);
  const timed = async (params: Record<string, unknown>) => {
    const started = performance.now();
    await command(system, account, schedulerRev, 'create_schedule', params);
    return performance.now() - started;
  };
  const createStarted = Date.now();
  const createMs = await pool(SCHEDULES, CONCURRENCY, (i) =>
    timed({
      cron: `${i % 60} * * * * *`,
      target: {
        revision_id: work.revisionId,
        session_id: work.sessionIds[i % work.sessionIds.length],
        definition_id: work.definitionId,
      },
      input_data: { n: i },
    }),
  );
  const createSeconds = (Date.now() - createStarted) / 1000;
  log(`created in ${createSeconds.toFixed(1)} s; latency one at a time, then mixed expressions`);
  // Latency one request at a time (the 16-at-a-time figure above is mostly queueing on 2 cores).
  const aloneMs = await pool(200, 1, (i) =>
    timed({
      cron: `${i % 60} ${i % 60} * * * *`,
      enabled: false,
      target: { revision_id: work.revisionId, session_id: work.sessionIds[0], definition_id: work.definitionId },
    }),
  );
  const mixedMs = await pool(MIXED.length * 20, 1, (i) =>
    timed({
      cron: MIXED[i % MIXED.length]![0],
      timezone: MIXED[i % MIXED.length]![1],
      enabled: false,
      target: { revision_id: work.revisionId, session_id: work.sessionIds[0], definition_id: work.definitionId },
    }),
  );

  // Measure whole minutes, starting at the first minute boundary after every schedule fired once.
  await sleep(61_000 - (Date.now() % 60_000) + 5_000);
  const start = Math.ceil(Date.now() / 60_000) * 60_000;
  const end = start + MINUTES * 60_000;
  const postmaster = await postmasterPid(system.sql);
  const groups = { runner: [system.runners[0]!.pid], 'control plane': [system.controlPlane.pid] };
  await sleep(start - Date.now());
  const before = await cpuSnapshot(groups, postmaster);
  log(`measuring ${MINUTES} minute(s) of fires`);
  await sleep(end - Date.now());
  const after = await cpuSnapshot(groups, postmaster);
  const firing = cpuSpent(before, after);
  // Fires due just before the end finish within a few seconds.
  await sleep(5_000);

  const {
    rows: [counts],
  } = await system.sql.query<{ runs: number; distinct_runs: number; started: number; refused: number; failed: number }>(
    `SELECT count(*)::int AS runs, count(DISTINCT (schedule_id, due_at))::int AS distinct_runs,
            count(*) FILTER (WHERE status = 'started')::int AS started, count(*) FILTER (WHERE status = 'refused')::int AS refused,
            count(*) FILTER (WHERE status = 'failed')::int AS failed
       FROM schedule_runs WHERE due_at >= to_timestamp($1 / 1000.0) AND due_at < to_timestamp($2 / 1000.0)`,
    [start, end],
  );
  const { rows: lags } = await system.sql.query<{ ms: number }>(
    `SELECT extract(epoch FROM (e.created_at - r.due_at)) * 1000 AS ms
       FROM schedule_runs r JOIN executions e ON e.id = r.execution_id
      WHERE r.due_at >= to_timestamp($1 / 1000.0) AND r.due_at < to_timestamp($2 / 1000.0)`,
    [start, end],
  );
  const lag = summarize(lags.map((r) => Number(r.ms)));
  // The fired executions run too (their three nodes), not only get created.
  const { rows: runs } = await system.sql.query<{ status: string; ms: number | null }>(
    `SELECT e.status, extract(epoch FROM (e.ended_at - e.created_at)) * 1000 AS ms
       FROM schedule_runs r JOIN executions e ON e.id = r.execution_id
      WHERE r.due_at >= to_timestamp($1 / 1000.0) AND r.due_at < to_timestamp($2 / 1000.0)`,
    [start, end],
  );
  const succeeded = runs.filter((r) => r.status === 'succeeded').length;
  const ran = summarize(runs.filter((r) => r.ms !== null).map((r) => Number(r.ms)));
  const expected = SCHEDULES * MINUTES;

  // The same executions without a scheduler: a client creates them at the rate the schedules fire.
  log('the same rate of executions from a client, for the CPU comparison');
  await system.sql.query(`UPDATE schedules SET enabled = false, next_fire_at = NULL WHERE revision_id = $1`, [
    schedulerRev,
  ]);
  await sleep(10_000);
  const rpc = await connectRpc(system, account);
  const clientBefore = await cpuSnapshot(groups, postmaster);
  const clientStart = Date.now();
  let index = 0;
  const perSecond = SCHEDULES / 60;
  const inFlight: Promise<unknown>[] = [];
  for (let second = 0; second < 60; second++) {
    const tickEnd = clientStart + (second + 1) * 1000;
    const batch = Math.round(perSecond * (second + 1)) - Math.round(perSecond * second);
    const gapMs = 1000 / Math.max(1, batch);
    for (let i = 0; i < batch; i++) {
      inFlight.push(createExecution(rpc, work, index++).catch(() => undefined));
      await sleep(gapMs * 0.9);
    }
    if (Date.now() < tickEnd) await sleep(tickEnd - Date.now());
  }
  await Promise.all(inFlight);
  const clientAfter = await cpuSnapshot(groups, postmaster);
  const clientSeconds = (Date.now() - clientStart) / 1000;
  rpc.close();
  const plain = cpuSpent(clientBefore, clientAfter);

  const windowSeconds = (end - start) / 1000;
  const pct = (seconds: number, over: number) => `${fmt((100 * seconds) / over, 0)}%`;
  // The scheduler's share: the CPU of firing (executions run included) beside that of the same
  // executions created by a client instead, per group and per fire.
  const share = (name: string) =>
    `${pct(firing[name] ?? 0, windowSeconds)} firing; ${pct(plain[name] ?? 0, clientSeconds)} with a client's creates instead`;
  const perFire = (((firing.runner ?? 0) + (firing.postgres ?? 0)) * 1000) / Math.max(1, counts!.runs);
  const perCreate =
    (((plain.runner ?? 0) + (plain.postgres ?? 0) + (plain['control plane'] ?? 0)) * 1000) / Math.max(1, index);
  const create = summarize(createMs);
  const alone = summarize(aloneMs);
  const mixed = summarize(mixedMs);
  return table([
    ['figure', 'value', 'target'],
    [
      `create_schedule: ${SCHEDULES} creates, 16 at a time (p50 / p99, rate)`,
      `${fmt(create.p50)} / ${fmt(create.p99)} ms, ${fmt(SCHEDULES / createSeconds, 0)}/s`,
      '-',
    ],
    [
      'create_schedule p50 / p99, one at a time (every-minute expressions)',
      `${fmt(alone.p50)} / ${fmt(alone.p99)} ms`,
      'p99 <= 20 ms',
    ],
    [
      `create_schedule p50 / p99, one at a time (${MIXED.length} expressions x 20: leap day, DST zones)`,
      `${fmt(mixed.p50)} / ${fmt(mixed.p99)} ms`,
      'p99 <= 20 ms',
    ],
    [`fires over ${MINUTES} whole minute(s): counted / expected`, `${counts!.runs} / ${expected}`, 'exact'],
    [
      'duplicates / missing',
      `${counts!.runs - counts!.distinct_runs} / ${Math.max(0, expected - counts!.distinct_runs)}`,
      '0 / 0',
    ],
    ['runs started / refused / failed', `${counts!.started} / ${counts!.refused} / ${counts!.failed}`, 'all started'],
    [
      'fire lag (due → execution created) p50 / p99 / max',
      `${fmt(lag.p50)} / ${fmt(lag.p99)} / ${fmt(lag.max)} ms`,
      'p99 <= 1000 ms',
    ],
    [
      'fired executions succeeded 5 s after the window; created → ended p50 / p99',
      `${succeeded} / ${runs.length}; ${fmt(ran.p50)} / ${fmt(ran.p99)} ms`,
      'all',
    ],
    ['runner CPU (one core = 100%)', share('runner'), '-'],
    ['PostgreSQL CPU', share('postgres'), '-'],
    ['control plane CPU', share('control plane'), '-'],
    [
      'CPU per execution: fired (runner + PostgreSQL) / created by a client (+ control plane)',
      `${fmt(perFire, 2)} / ${fmt(perCreate, 2)} ms`,
      '-',
    ],
  ]);
}

await runSection(1, main);
