/**
 * The product beside the queue a user would otherwise pick (docs/benchmarks.md "Beside
 * graphile-worker"), on one DURABLE embedded PostgreSQL (fsync and synchronous commit on), in
 * the same run. Prints, asserts nothing.
 *
 * - The product: the bench's three-node `logic.code` workflow (bench/workflow.ts) created over the
 *   public WebSocket JSON-RPC API, one control plane and one runner at their defaults.
 * - The peer: graphile-worker running the same three steps as a chain of three jobs (each job
 *   adds the next), with its documented throughput settings (a local queue and batched
 *   completions), in this process, on the same server (its own schema).
 *
 * Start latency: product = first `node.started` − the execution's `created_at` (database clock);
 * peer = the first step's handler entered − `addJob` called (this process's clock). `--latency`
 * starts, one every `--gap` ms. Throughput: `--executions` executions (chains) with `--in-flight`
 * creates (adds) outstanding at a time, from the first create to the last end. Then the CPU and
 * I/O account of the product's throughput batch per execution: CPU ms of each process group, WAL
 * bytes and WAL fsyncs (pg_stat_io, PostgreSQL 16+), transactions committed (pg_stat_database).
 * The latency starts' path is cut at the database's clock (`startPath`: the create's transaction,
 * its commit to the claim, the claim's commit; `track_commit_timestamp` is on for it) with their
 * statements' mean server times. `--json <file>` writes every figure as JSON as well.
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/peer.ts [--executions 3000 --in-flight 64 --latency 200 --gap 15]
 * `npm run bench` runs it as a section of its own (`--peer-only` runs only it).
 */
import { writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import '../shared/db/embedded.ts';
import { Logger, run, type Runner, type Task } from 'graphile-worker';
import { createOrgWorkloads, createWorkload, type Workload } from './client.ts';
import { childPids } from '../shared/proc-stat.ts';
import { cpuSnapshot, cpuSpent, postmasterPid } from './cpu.ts';
import { batchSpan, createMany, executionLatencies, waitForEnd } from './executions.ts';
import { observabilityCost } from './observability-cost.ts';
import { fmt, summarize, table, type Summary } from './stats.ts';
import { BENCH_GRAPH } from './workflow.ts';
import { startSystem, type System } from './system.ts';

const { values: args } = parseArgs({
  options: {
    executions: { type: 'string', default: '3000' },
    'in-flight': { type: 'string', default: '64' },
    latency: { type: 'string', default: '200' },
    gap: { type: 'string', default: '15' },
    orgs: { type: 'string', default: '1' },
    'round-robin-orgs': { type: 'string', default: '1000' },
    'observability-rounds': { type: 'string', default: '3' },
    /** Also write the figures as JSON to this file (bench/promise-costs.ts reads it). */
    json: { type: 'string' },
  },
});
const EXECUTIONS = Number(args.executions);
const IN_FLIGHT = Number(args['in-flight']);
const LATENCY = Number(args.latency);
const GAP_MS = Number(args.gap);
const ORGS = Number(args.orgs);
/** Organizations of the round-robin row (0: no such row). */
const ROUND_ROBIN_ORGS = Number(args['round-robin-orgs']);
/** Alternating batches per setup of the observability rows (0: no such rows). */
const OBSERVABILITY_ROUNDS = Number(args['observability-rounds']);
/** The peer's worker concurrency and local queue: graphile-worker's performance page's advice, sized for 2 cores. */
const PEER_CONCURRENCY = 16;
const PEER_LOCAL_QUEUE = PEER_CONCURRENCY + 1;
const BATCH_TIMEOUT_MS = 180_000;

const log = (message: string) => process.stderr.write(`[bench peer] ${message}\n`);

interface Side {
  start: Summary;
  perSecond: number;
  succeeded: number;
}

/**
 * The product's start path of the latency starts, cut at the database's clock (p50 and p99 of
 * each part; the parts' quantiles need not add up to the whole's):
 * - `create`: the create's transaction from its start (`created_at`, now()) to its commit record
 *   (`pg_xact_commit_timestamp` of its `execution.created` row, `track_commit_timestamp` on; the
 *   server stamps it before the commit's WAL flush): the create statement, the wake-up job's
 *   insert and the round trips between them;
 * - `wake`: that commit record to the claim statement's start (the `node.started` row's `at`, the
 *   claim's now()): the commit's WAL flush, the announcement's delivery to the runner's LISTEN
 *   connection, the runner's turn and the claim's dispatch;
 * - `claim`: the claim statement's start to its commit record: after `node.started`'s `at`, so
 *   outside the start latency, but before the first node runs;
 * - `firstNode`: `node.started` to the first node's `node.finished` (the claim, its flush, the hop
 *   to an engine thread and to a sandbox child, the node's run, the step statement's start);
 * - `walFsyncMs`: the mean time of one WAL fsync during the latency starts (`pg_stat_io`,
 *   `track_wal_io_timing` on), the flush each durable commit waits for.
 */
interface StartPath {
  create: Summary;
  wake: Summary;
  claim: Summary;
  firstNode: Summary;
  walFsyncMs: number;
  /** The latency starts' statements: calls per start and mean server ms (pg_stat_statements). */
  statements: Statement[];
}

async function startPath(
  system: System,
  ids: readonly string[],
  statements: Statement[],
  walFsyncMs: number,
): Promise<StartPath> {
  const { rows } = await system.sql.query<{
    create_ms: number;
    wake_ms: number;
    claim_ms: number;
    first_node_ms: number | null;
  }>(
    `SELECT extract(epoch FROM pg_xact_commit_timestamp(c.xmin) - e.created_at)::float8 * 1000 AS create_ms,
            extract(epoch FROM s.at - pg_xact_commit_timestamp(c.xmin))::float8 * 1000 AS wake_ms,
            extract(epoch FROM pg_xact_commit_timestamp(s.xmin) - s.at)::float8 * 1000 AS claim_ms,
            extract(epoch FROM f.at - s.at)::float8 * 1000 AS first_node_ms
       FROM executions e
       JOIN session_events c ON c.execution_id = e.id AND c.kind = 'execution.created'
       JOIN LATERAL (SELECT v.at, v.xmin FROM execution_events v
                      WHERE v.execution_id = e.id AND v.kind = 'node.started' ORDER BY v.id LIMIT 1) s ON true
       LEFT JOIN LATERAL (SELECT v.at FROM execution_events v
                           WHERE v.execution_id = e.id AND v.kind = 'node.finished' ORDER BY v.id LIMIT 1) f ON true
      WHERE e.id = ANY($1::uuid[])`,
    [ids],
  );
  return {
    create: summarize(rows.map((r) => r.create_ms)),
    wake: summarize(rows.map((r) => r.wake_ms)),
    claim: summarize(rows.map((r) => r.claim_ms)),
    firstNode: summarize(rows.flatMap((r) => (r.first_node_ms === null ? [] : [r.first_node_ms]))),
    walFsyncMs,
    statements,
  };
}

/** WAL fsyncs and their total time in ms so far (`pg_stat_io`; the time needs `track_wal_io_timing`). */
async function walFsyncs(system: System): Promise<{ count: number; ms: number }> {
  const { rows } = await system.sql.query<{ count: string; ms: number }>(
    `SELECT coalesce(sum(fsyncs), 0)::text AS count, coalesce(sum(fsync_time), 0)::float8 AS ms
       FROM pg_stat_io WHERE object = 'wal'`,
  );
  return { count: Number(rows[0]!.count), ms: rows[0]!.ms };
}

/** The three steps as graphile-worker tasks: each adds the next, the last one resolves its chain. */
function peerTasks(entered: Map<number, number>, ended: (chain: number) => void): Record<string, Task> {
  return {
    step_a: async (payload, helpers) => {
      const { chain, n } = payload as { chain: number; n: number };
      if (!entered.has(chain)) entered.set(chain, performance.now());
      await helpers.addJob('step_b', { chain, n, a: 1 });
    },
    step_b: async (payload, helpers) => {
      await helpers.addJob('step_c', { ...(payload as object), b: 2 });
    },
    step_c: async (payload) => {
      ended((payload as { chain: number }).chain);
    },
  };
}

async function peer(system: System): Promise<Side> {
  const entered = new Map<number, number>();
  const waiting = new Map<number, () => void>();
  const runner: Runner = await run({
    connectionString: system.databaseUrl,
    concurrency: PEER_CONCURRENCY,
    noHandleSignals: true,
    pollInterval: 2000,
    taskList: peerTasks(entered, (chain) => waiting.get(chain)?.()),
    preset: { worker: { localQueue: { size: PEER_LOCAL_QUEUE }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } },
    logger: new Logger(() => () => {}),
  });
  try {
    const chainDone = (chain: number) => new Promise<void>((resolve) => waiting.set(chain, resolve));
    // Warm-up: the peer's statements prepared and its pool filled, as the product's are by its own warm-up.
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const done = chainDone(-1 - i);
        await runner.addJob('step_a', { chain: -1 - i, n: i });
        await done;
      }),
    );

    log(`peer: ${LATENCY} starts, one every ${GAP_MS} ms`);
    const latencies: number[] = [];
    const pending: Promise<void>[] = [];
    for (let i = 0; i < LATENCY; i++) {
      const chain = i;
      const done = chainDone(chain);
      const at = performance.now();
      pending.push(
        runner.addJob('step_a', { chain, n: i }).then(async () => {
          await done;
          latencies.push(entered.get(chain)! - at);
        }),
      );
      await sleep(GAP_MS);
    }
    await Promise.all(pending);

    log(`peer: ${EXECUTIONS} chains, ${IN_FLIGHT} adds in flight`);
    const ends: Promise<void>[] = [];
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        for (;;) {
          const i = next++;
          if (i >= EXECUTIONS) return;
          const chain = LATENCY + i;
          ends.push(chainDone(chain));
          await runner.addJob('step_a', { chain, n: i });
        }
      }),
    );
    await Promise.all(ends);
    const seconds = (performance.now() - started) / 1000;
    return { start: summarize(latencies), perSecond: EXECUTIONS / seconds, succeeded: ends.length };
  } finally {
    await runner.stop();
  }
}

interface Statement {
  query: string;
  callsPerExecution: number;
  msPerExecution: number;
  /** Mean server ms of one call. */
  meanMs: number;
}

interface Account {
  statementsPerExecution: number;
  /** The statements that took the most of the server's execution time, most first. */
  topStatements: Statement[];
  cpuMsPerExecution: Record<string, number>;
  walBytesPerExecution: number;
  walSyncsPerExecution: number;
  commitsPerExecution: number;
}

async function ioSnapshot(system: System): Promise<{ wal: bigint; syncs: number; commits: number }> {
  const { rows } = await system.sql.query<{ lsn: string; syncs: string; commits: string }>(
    `SELECT pg_current_wal_lsn()::text AS lsn,
            (SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal')::text AS syncs,
            (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS commits`,
  );
  const [hi, lo] = rows[0]!.lsn.split('/');
  return {
    wal: (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`),
    syncs: Number(rows[0]!.syncs),
    commits: Number(rows[0]!.commits),
  };
}

/** pg_stat_statements (preloaded on the bench's durable server) from zero, for this database. */
async function resetStatements(system: System): Promise<void> {
  await system.sql.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await system.sql.query('SELECT pg_stat_statements_reset()');
}

/** Statements executed in this database since the reset: how many, and the costliest ones. */
async function readStatements(
  system: System,
  executions: number,
): Promise<Pick<Account, 'statementsPerExecution' | 'topStatements'>> {
  const where = 'dbid = (SELECT oid FROM pg_database WHERE datname = current_database())';
  const total = await system.sql.query<{ calls: string }>(
    `SELECT coalesce(sum(calls), 0)::text AS calls FROM pg_stat_statements WHERE ${where}`,
  );
  const { rows } = await system.sql.query<{ query: string; calls: string; ms: number; mean: number }>(
    `SELECT query, calls::text AS calls, total_exec_time AS ms, mean_exec_time AS mean FROM pg_stat_statements
      WHERE ${where} ORDER BY total_exec_time DESC LIMIT ${Number(process.env.PEER_TOP ?? 12)}`,
  );
  return {
    statementsPerExecution: Number(total.rows[0]!.calls) / executions,
    topStatements: rows.map((r) => ({
      query: r.query
        .replace(/\s+/g, ' ')
        .replaceAll('|', '¦')
        .slice(0, Number(process.env.PEER_WIDTH ?? 100)),
      callsPerExecution: Number(r.calls) / executions,
      msPerExecution: r.ms / executions,
      meanMs: r.mean,
    })),
  };
}

async function product(system: System): Promise<{ side: Side; account: Account; path: StartPath }> {
  const workloads: Workload[] = [];
  for (let i = 0; i < ORGS; i++)
    workloads.push(await createWorkload(system, BENCH_GRAPH, { sessions: 8, quota: EXECUTIONS + LATENCY + 1000 }));
  const warm = await createMany(system, workloads, { count: 500, window: 8 });
  await waitForEnd(system.sql, warm, BATCH_TIMEOUT_MS);

  log(`product: ${LATENCY} starts, one every ${GAP_MS} ms`);
  await resetStatements(system);
  const fsyncsBefore = await walFsyncs(system);
  const latencyIds = await createMany(system, workloads, { count: LATENCY, window: 1, ratePerSecond: 1000 / GAP_MS });
  await waitForEnd(system.sql, latencyIds, BATCH_TIMEOUT_MS);
  const fsyncsAfter = await walFsyncs(system);
  const latencyStatements = await readStatements(system, LATENCY);
  const { toStart } = await executionLatencies(system.sql, latencyIds);
  const path = await startPath(
    system,
    latencyIds,
    latencyStatements.topStatements,
    (fsyncsAfter.ms - fsyncsBefore.ms) / Math.max(1, fsyncsAfter.count - fsyncsBefore.count),
  );

  log(`product: ${EXECUTIONS} executions, ${IN_FLIGHT} creates in flight`);
  const postmaster = await postmasterPid(system.sql);
  const sandboxChildren = (await Promise.all(system.runners.map((r) => childPids(r.pid)))).flat();
  const groups = {
    'control plane': [system.controlPlane.pid],
    'runner (with its sandbox children)': system.runners.map((r) => r.pid),
    // The same children counted again on their own (live at the batch's start): what the hop to a
    // sandbox process and the run in it cost, against the runner's main and engine threads.
    '  of which its sandbox children': sandboxChildren,
  };
  await resetStatements(system);
  const cpuBefore = await cpuSnapshot(groups, postmaster);
  const ioBefore = await ioSnapshot(system);
  const ids = await createMany(system, workloads, { count: EXECUTIONS, window: 8, inFlight: IN_FLIGHT });
  const open = await waitForEnd(system.sql, ids, BATCH_TIMEOUT_MS);
  const cpuAfter = await cpuSnapshot(groups, postmaster);
  const ioAfter = await ioSnapshot(system);
  const statements = await readStatements(system, EXECUTIONS);
  const span = await batchSpan(system.sql, ids);
  if (open > 0) log(`product: ${open} executions had not ended after ${BATCH_TIMEOUT_MS / 1000} s`);
  const spent = cpuSpent(cpuBefore, cpuAfter);
  return {
    path,
    side: { start: summarize(toStart), perSecond: span.succeeded / span.seconds, succeeded: span.succeeded },
    account: {
      ...statements,
      cpuMsPerExecution: Object.fromEntries(Object.entries(spent).map(([name, s]) => [name, (s * 1000) / EXECUTIONS])),
      walBytesPerExecution: Number(ioAfter.wal - ioBefore.wal) / EXECUTIONS,
      walSyncsPerExecution: (ioAfter.syncs - ioBefore.syncs) / EXECUTIONS,
      commitsPerExecution: (ioAfter.commits - ioBefore.commits) / EXECUTIONS,
    },
  };
}

/**
 * The throughput batch again, over `ROUND_ROBIN_ORGS` organizations of one account taken in turn
 * (each create the next organization's): what per-organization state (quotas' rows, fair
 * queueing, caches) costs when every execution is another organization's.
 */
async function roundRobin(system: System): Promise<Omit<Side, 'start'>> {
  log(`product: ${ROUND_ROBIN_ORGS} organizations`);
  const workloads = await createOrgWorkloads(system, BENCH_GRAPH, { count: ROUND_ROBIN_ORGS, quota: EXECUTIONS });
  const warm = await createMany(system, workloads, {
    count: Math.min(500, ROUND_ROBIN_ORGS),
    window: 1,
    inFlight: IN_FLIGHT,
  });
  await waitForEnd(system.sql, warm, BATCH_TIMEOUT_MS);
  log(`product: ${EXECUTIONS} executions over ${ROUND_ROBIN_ORGS} organizations, ${IN_FLIGHT} creates in flight`);
  const ids = await createMany(system, workloads, { count: EXECUTIONS, window: 1, inFlight: IN_FLIGHT });
  const open = await waitForEnd(system.sql, ids, BATCH_TIMEOUT_MS);
  if (open > 0) log(`product: ${open} executions had not ended after ${BATCH_TIMEOUT_MS / 1000} s`);
  const span = await batchSpan(system.sql, ids);
  return { perSecond: span.succeeded / span.seconds, succeeded: span.succeeded };
}

async function main(): Promise<string> {
  // The start path's commits at the database's clock and the WAL flush's time (startPath).
  const system = await startSystem({
    runners: 1,
    durable: true,
    serverFlags: ['-c', 'track_commit_timestamp=on', '-c', 'track_wal_io_timing=on'],
  });
  try {
    const ours = await product(system);
    const many = ROUND_ROBIN_ORGS > 0 ? await roundRobin(system) : null;
    const theirs = await peer(system);
    const p = ours.side;
    const g = theirs;
    const ratio = (a: number, b: number) => `×${fmt(a / b, 2)}`;
    const yes = (ok: boolean) => (ok ? 'yes' : 'NO');
    const rows = [
      ['figure (durable PostgreSQL, same run)', 'product', 'graphile-worker', 'ratio', 'target', 'met'],
      [
        'start latency p50',
        `${fmt(p.start.p50)} ms`,
        `${fmt(g.start.p50)} ms`,
        ratio(p.start.p50, g.start.p50),
        '<= ×1.0',
        yes(p.start.p50 <= g.start.p50),
      ],
      [
        'start latency p99',
        `${fmt(p.start.p99)} ms`,
        `${fmt(g.start.p99)} ms`,
        ratio(p.start.p99, g.start.p99),
        '<= ×1.5',
        yes(p.start.p99 <= 1.5 * g.start.p99),
      ],
      [
        `throughput (${EXECUTIONS}, ${IN_FLIGHT} in flight, ${ORGS} org${ORGS === 1 ? '' : 's'})`,
        `${fmt(p.perSecond, 0)}/s (${p.succeeded} succeeded)`,
        `${fmt(g.perSecond, 0)}/s`,
        ratio(p.perSecond, g.perSecond),
        '>= ×5',
        yes(p.perSecond >= 5 * g.perSecond),
      ],
    ];
    if (many)
      rows.push([
        `throughput over ${ROUND_ROBIN_ORGS} organizations round robin`,
        `${fmt(many.perSecond, 0)}/s (${many.succeeded} succeeded)`,
        '',
        `×${fmt(many.perSecond / p.perSecond, 2)} of one org`,
        '>= ×0.8 of one org',
        yes(many.perSecond >= 0.8 * p.perSecond),
      ]);
    const a = ours.account;
    const accountRows = [
      ['per execution of the product throughput batch', 'value'],
      ...Object.entries(a.cpuMsPerExecution).map(([name, ms]) => [`CPU: ${name}`, `${fmt(ms, 2)} ms`]),
      ['WAL written', `${fmt(a.walBytesPerExecution / 1024, 1)} KiB`],
      ['WAL fsyncs (pg_stat_io)', fmt(a.walSyncsPerExecution, 2)],
      ['transactions committed', fmt(a.commitsPerExecution, 1)],
      ['statements (each a round trip)', fmt(a.statementsPerExecution, 1)],
    ];
    const statementRows = [
      ['costliest statements (pg_stat_statements)', 'calls / execution', 'server ms / execution'],
      ...a.topStatements.map((st) => [st.query, fmt(st.callsPerExecution, 2), fmt(st.msPerExecution, 3)]),
    ];
    const sp = ours.path;
    const pathRows = [
      ['start path of the latency starts (database clock)', 'p50', 'p99'],
      ...(
        [
          ['create: created_at → its commit record (statement, job insert, round trips)', sp.create],
          ['wake: commit record → claim start = node.started.at (flush, NOTIFY, runner)', sp.wake],
          ['claim: its start → its commit record (after node.started.at)', sp.claim],
          ['first node: node.started.at → its node.finished.at', sp.firstNode],
        ] as const
      ).map(([name, s]) => [name, `${fmt(s.p50, 2)} ms`, `${fmt(s.p99, 2)} ms`]),
      ['one WAL fsync during the latency starts (mean)', `${fmt(sp.walFsyncMs, 2)} ms`, ''],
    ];
    const pathStatementRows = [
      ['statements of the latency starts', 'calls / start', 'mean server ms'],
      ...sp.statements.slice(0, 8).map((st) => [st.query, fmt(st.callsPerExecution, 2), fmt(st.meanMs, 3)]),
    ];
    if (args.json !== undefined)
      await writeFile(
        args.json,
        JSON.stringify({ product: ours, peer: theirs, roundRobin: many, executions: EXECUTIONS }, null, 2),
      );
    return [
      table(rows),
      '',
      table(pathRows),
      '',
      table(pathStatementRows),
      '',
      table(accountRows),
      '',
      table(statementRows),
    ].join('\n');
  } finally {
    await system.stop();
  }
}

process.stdout.write(`${await main()}\n`);
if (OBSERVABILITY_ROUNDS > 0)
  process.stdout.write(
    `\n${await observabilityCost({ executions: EXECUTIONS, inFlight: IN_FLIGHT, rounds: OBSERVABILITY_ROUNDS })}\n`,
  );
