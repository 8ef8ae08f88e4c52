/**
 * A short throughput probe for engine work (prints, asserts nothing): the system on embedded
 * PostgreSQL, `--runners` runner processes, `--executions` three-node executions created as fast
 * as the sockets allow, then executions/s and CPU per execution per process group. `--drain`
 * creates the batch with no runner and then starts the runners: the runners' and PostgreSQL's
 * cost of running executions alone, at full batches; with `--threads` it also prints the runners'
 * CPU and context switches per execution by thread (the engine worker thread is the busiest
 * `WorkerThread`; isolated-vm's threads carry the same name). The full report with its targets is
 * `npm run bench`; this is the inner loop of tuning.
 *   ./node_modules/.bin/node --no-node-snapshot bench/quick.ts [--executions 3000] [--runners 1] [--orgs 8] [--window 8 | --in-flight 64] [--drain] [--threads] [--profile DIR]
 */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createWorkload, type Workload } from './client.ts';
import { childPids } from '../shared/proc-stat.ts';
import { cpuSnapshot, cpuSpent, postmasterPid, threadTimes, type ThreadTimes } from './cpu.ts';
import { batchSpan, createMany, waitForEnd } from './executions.ts';
import { BENCH_GRAPH } from './workflow.ts';
import { startSystem, type System } from './system.ts';

const { values: args } = parseArgs({
  options: {
    executions: { type: 'string', default: '3000' },
    runners: { type: 'string', default: '1' },
    orgs: { type: 'string', default: '8' },
    window: { type: 'string', default: '8' },
    'in-flight': { type: 'string' },
    profile: { type: 'string' },
    drain: { type: 'boolean', default: false },
    threads: { type: 'boolean', default: false },
  },
});

async function batch(system: System, workloads: Workload[], count: number): Promise<string> {
  const groups = { 'control plane': [system.controlPlane.pid], runners: system.runners.map((r) => r.pid) };
  const postmaster = await postmasterPid(system.sql);
  const before = await cpuSnapshot(groups, postmaster);
  const threadsBefore = args.threads ? await runnerThreads(system.runners.map((r) => r.pid)) : [];
  const started = performance.now();
  const inFlight = args['in-flight'] === undefined ? {} : { inFlight: Number(args['in-flight']) };
  const ids = await createMany(system, workloads, { count, window: Number(args.window), ...inFlight });
  const createSeconds = (performance.now() - started) / 1000;
  await waitForEnd(system.sql, ids, 120_000);
  const cpu = cpuSpent(before, await cpuSnapshot(groups, postmaster));
  const span = await batchSpan(system.sql, ids);
  const perExecution = Object.entries(cpu).map(
    ([group, seconds]) => `${group} ${((seconds * 1000) / count).toFixed(2)}`,
  );
  const total = (Object.values(cpu).reduce((a, b) => a + b, 0) * 1000) / count;
  const threads = args.threads
    ? `\n${threadTable(threadsSpent(threadsBefore, await runnerThreads(system.runners.map((r) => r.pid))), count)}`
    : '';
  return `${(span.succeeded / span.seconds).toFixed(0)}/s (${span.succeeded} in ${span.seconds.toFixed(2)} s), creates ${(count / createSeconds).toFixed(0)}/s; CPU ms/execution: ${perExecution.join(', ')}, total ${total.toFixed(2)}${threads}`;
}

/** The threads of runners `pids` and of their sandbox child processes, where their code runs. */
async function runnerThreads(pids: number[]): Promise<ThreadTimes[]> {
  const all = [];
  for (const pid of pids) all.push(pid, ...(await childPids(pid)));
  return threadTimes(all);
}

/** What each thread of `after` spent since `before` (a thread new since then: all of it). */
function threadsSpent(before: ThreadTimes[], after: ThreadTimes[]): ThreadTimes[] {
  const earlier = new Map(before.map((t) => [`${t.pid}/${t.tid}`, t]));
  return after.map((t) => {
    const b = earlier.get(`${t.pid}/${t.tid}`);
    return b
      ? {
          ...t,
          seconds: t.seconds - b.seconds,
          voluntarySwitches: t.voluntarySwitches - b.voluntarySwitches,
          involuntarySwitches: t.involuntarySwitches - b.involuntarySwitches,
        }
      : t;
  });
}

/** Creates `count` with no runner running, then starts the runners and measures until all ended. */
async function drain(system: System, workloads: Workload[], count: number): Promise<string> {
  // Without --in-flight, each organization gets `window` lanes and the first lanes take every
  // execution: with 1,000 organizations and a window of 8, only 250 of them would get any.
  const inFlight = args['in-flight'] === undefined ? {} : { inFlight: Number(args['in-flight']) };
  const ids = await createMany(system, workloads, { count, window: Number(args.window), ...inFlight });
  const postmaster = await postmasterPid(system.sql);
  const started = performance.now();
  const before = await cpuSnapshot({}, postmaster);
  const runners = [];
  for (let i = 0; i < Number(args.runners); i++) runners.push(await system.startRunner());
  await waitForEnd(system.sql, ids, 120_000);
  const seconds = (performance.now() - started) / 1000;
  const after = await cpuSnapshot({ runners: runners.map((r) => r.pid) }, postmaster);
  const cpu = cpuSpent({ seconds: { ...before.seconds, runners: 0 } }, after);
  const perExecution = Object.entries(cpu).map(([group, s]) => `${group} ${((s * 1000) / count).toFixed(2)}`);
  const summary = `drained ${count} in ${seconds.toFixed(2)} s (${(count / seconds).toFixed(0)}/s, runner start included); CPU ms/execution: ${perExecution.join(', ')}`;
  if (!args.threads) return summary;
  // The runners started with the batch, so a thread's totals are what it spent on it.
  return `${summary}\n${threadTable(await runnerThreads(runners.map((r) => r.pid)), count)}`;
}

/** Threads that took at least 1 % of the runners' CPU, one line each; the rest summed per name. */
function threadTable(threads: ThreadTimes[], count: number): string {
  const total = threads.reduce((sum, t) => sum + t.seconds, 0);
  const rows = new Map<string, { seconds: number; voluntary: number; involuntary: number; n: number }>();
  for (const t of threads) {
    const key = t.seconds >= total / 100 ? `${t.name} ${t.pid}/${t.tid}` : `${t.name} (others)`;
    const row = rows.get(key) ?? { seconds: 0, voluntary: 0, involuntary: 0, n: 0 };
    row.seconds += t.seconds;
    row.voluntary += t.voluntarySwitches;
    row.involuntary += t.involuntarySwitches;
    row.n += 1;
    rows.set(key, row);
  }
  return [...rows]
    .sort((a, b) => b[1].seconds - a[1].seconds)
    .map(
      ([key, r]) =>
        `  ${key.padEnd(28)} ${((r.seconds * 1000) / count).toFixed(3)} ms/execution, switches/execution ${(r.voluntary / count).toFixed(2)} voluntary ${(r.involuntary / count).toFixed(2)} involuntary${r.n > 1 ? ` (${r.n} threads)` : ''}`,
    )
    .join('\n');
}

let system: System | undefined;
try {
  let runnerNodeArgs: string[] = [];
  if (args.profile) {
    const dir = resolve(args.profile);
    await mkdir(dir, { recursive: true });
    runnerNodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
  }
  system = await startSystem({ runners: args.drain ? 0 : Number(args.runners), runnerNodeArgs });
  const workloads: Workload[] = [];
  for (let i = 0; i < Number(args.orgs); i++)
    workloads.push(await createWorkload(system, BENCH_GRAPH, { sessions: 8, quota: 1_000_000 }));
  if (args.drain) {
    process.stdout.write(`${await drain(system, workloads, Number(args.executions))}\n`);
    process.exit(0);
  }
  process.stderr.write(`warm-up: ${await batch(system, workloads, 300)}\n`);
  process.stdout.write(`${await batch(system, workloads, Number(args.executions))}\n`);
} finally {
  await system?.stop();
}
process.exit(0);
