/**
 * Tenant isolation in the runners (docs/benchmarks.md, "Tenant isolation"), on a system of its
 * own with one runner at its defaults. Prints, asserts nothing:
 *
 * - noisy neighbour: organization A keeps 10 hostile executions running (one phase each: code that
 *   never settles, `for (;;) {}`, a node routing to itself, a memory bomb) while organization B
 *   creates three-node executions at 20/s; B's create → succeeded against B alone in the same run,
 *   runner restarts, B's failures;
 * - many tenants: three-node executions over 1 organization, then round robin over 1,000, as fast
 *   as they can be created; executions/s, create → first node.started, runner RSS, contexts and
 *   isolates alive;
 * - first run: what an organization's first `logic.code` run costs over a warm one (bench/first-run.ts);
 * - cancel: `cancel_execution` of a spinning execution → the isolate it held running the next run
 *   (a run of the same organization that waited for it);
 * - memory: each of the five ways to grow a sandbox child outside its heap bounds (Intl objects,
 *   Segmenter results, resizable ArrayBuffers, generated code, run-time property escapes) asking
 *   for 4 GiB, alone and all five at once, and a plain run measured the same way as a control,
 *   while B creates three-node executions at RATE/s: the
 *   runs' outcome and time to fail, the peak resident memory of every sandbox child (read from
 *   /proc every 50 ms) against its bound, the runner's pid, B's p99 against 2 × alone + 50 ms.
 *
 *   ./node_modules/.bin/node --no-node-snapshot bench/isolation.ts [--tenants 1000 --executions 2000 --seconds 10
 *                                                                  --parts first,cancel,tenants,neighbour,memory]
 * `npm run bench` runs it as its last section (`--isolation-only` runs only it).
 */
import { availableParallelism } from 'node:os';
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import '../shared/db/embedded.ts';
import { childPids } from '../shared/proc-stat.ts';
import { command, createWorkload, setOverride, type Workload } from './client.ts';
import { batchSpan, createMany, executionLatencies, statusCounts, waitForEnd } from './executions.ts';
import { firstRunRows } from './first-run.ts';
import { fmt, summarize, table, type Summary } from './stats.ts';
import { BENCH_GRAPH } from './workflow.ts';
import { startSystem, type System } from './system.ts';

const { values: args } = parseArgs({
  options: {
    tenants: { type: 'string', default: '1000' },
    executions: { type: 'string', default: '2000' },
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '20' },
    cancels: { type: 'string', default: '20' },
    parts: { type: 'string', default: 'first,cancel,tenants,neighbour,memory' },
  },
});
const PARTS = new Set(args.parts.split(','));
const TENANTS = Number(args.tenants);
const EXECUTIONS = Number(args.executions);
const SECONDS = Number(args.seconds);
const RATE = Number(args.rate);
const CANCELS = Number(args.cancels);
/** A's executions kept running in each noisy-neighbour phase (its default workflow.running_executions_per_org). */
const HOSTILE = 10;
/** A re-creates its ended executions at most this fast (a flood of creates is refused by the API's own bounds; this bench measures the runner). */
const HOSTILE_CREATES_PER_SECOND = 20;

const log = (message: string) => process.stderr.write(`[bench isolation] ${message}\n`);

const code = (source: string, routes?: Record<string, string | null>) => ({
  processor: 'logic.code',
  config: { code: source },
  ...(routes ? { routes } : {}),
});
const HOSTILE_GRAPHS = {
  'never settles': {
    start: 'wait',
    nodes: { wait: code('export default async () => { await new Promise(() => {}) }') },
  },
  'for (;;) {}': { start: 'spin', nodes: { spin: code('export default () => { for (;;) {} }') } },
  'self-routing graph': {
    start: 'again',
    nodes: { again: code('export default (input) => ({ n: (input?.n ?? 0) + 1 })', { success: 'again' }) },
  },
  'memory bomb': { start: 'bomb', nodes: { bomb: code('export default () => new Array(1e9).fill(0)') } },
} as const;
type Hostile = keyof typeof HOSTILE_GRAPHS;

/** Code asking for ≈ 4 GiB outside the isolate's heap bound, five ways (docs/sandbox.md, Memory). */
const ALLOCATORS: Record<string, string> = {
  'Intl objects': `export default () => { const kept = []; for (let i = 0; i < 160000; i++) kept.push(new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' })); return kept.length }`,
  'Segmenter results': `export default () => { const s = 'a'.repeat(3e6); const g = new Intl.Segmenter(); const kept = []; for (let i = 0; i < 700; i++) kept.push(g.segment(s)); return kept.length }`,
  'resizable ArrayBuffers': `export default () => { const kept = []; for (let i = 0; i < 16; i++) { const b = new ArrayBuffer(2 ** 28, { maxByteLength: 2 ** 28 }); new Uint8Array(b).fill(1); kept.push(b) } return kept.length }`,
  'generated code': `export default () => { const kept = []; for (let i = 0; i < 64; i++) kept.push(new Function('return [' + '[1,2,3,4],'.repeat(8e5) + ']')); return kept.length }`,
  'property escapes': `export default () => new RegExp('[' + '\\\\p{RGI_Emoji}'.repeat(4500) + ']', 'v').test('x')`,
};
/**
 * A plain run by a new organization, measured like an allocator: B's figures beside it are what a
 * phase costs B without any bomb (a new organization's first run, the machine's own noise).
 */
const CONTROL = 'export default () => 1';
const CONTROL_LABEL = 'control: a plain run';
/** The runner's default sandbox child bound (SANDBOX_MEMORY_MB unset: 256 + 2 × 8 isolates × 64 MiB). */
const DEFAULT_BOUND_MB = 1280;

interface NeighbourRow {
  phase: string;
  b: Summary;
  bStatuses: Record<string, number>;
  aCreated: number;
  runnerRestarts: number;
}

async function unended(system: System, orgId: string): Promise<string[]> {
  const { rows } = await system.sql.query<{ id: string }>(
    'SELECT id FROM executions WHERE org_id = $1::uuid AND ended_at IS NULL',
    [orgId],
  );
  return rows.map((r) => r.id);
}

/** Keeps `HOSTILE` of A's executions of `definitionId` unended until `stop` resolves; returns how many it created. */
async function keepHostile(system: System, a: Workload, definitionId: string, stop: Promise<void>): Promise<number> {
  let stopped = false;
  void stop.then(() => (stopped = true));
  let created = 0;
  let session = 0;
  const started = performance.now();
  while (!stopped) {
    const open = (await unended(system, a.orgId)).length;
    for (let i = open; i < HOSTILE && !stopped; i++) {
      if (created >= ((performance.now() - started) / 1000 + 1) * HOSTILE_CREATES_PER_SECOND) break;
      try {
        await command(system, a.account, a.revisionId, 'create_execution', {
          session_id: a.sessionIds[session++ % a.sessionIds.length],
          definition_id: definitionId,
          input_data: null,
        });
        created++;
      } catch {
        break; // refused (its running limit): the next round looks again
      }
    }
    await sleep(50);
  }
  return created;
}

async function cancelAll(system: System, a: Workload): Promise<void> {
  for (const id of await unended(system, a.orgId)) {
    await command(system, a.account, a.revisionId, 'cancel_execution', { execution_id: id }).catch(() => {});
  }
}

/** B's executions at RATE/s for SECONDS, with A doing `hostile` meanwhile (or nothing). */
async function neighbourPhase(
  system: System,
  a: Workload,
  b: Workload,
  hostile: Hostile | null,
  definitions: Record<Hostile, string>,
): Promise<NeighbourRow> {
  const runner = system.runners[0]!;
  const pid = runner.pid;
  let release!: () => void;
  const stop = new Promise<void>((resolve) => (release = resolve));
  const keeper = hostile ? keepHostile(system, a, definitions[hostile], stop) : Promise.resolve(0);
  // Let A fill the runner first.
  if (hostile) await sleep(1500);
  const ids = await createMany(system, [b], { count: RATE * SECONDS, window: 4, ratePerSecond: RATE });
  const open = await waitForEnd(system.sql, ids, 120_000);
  release();
  const aCreated = await keeper;
  if (hostile) await cancelAll(system, a);
  if (open > 0) log(`${open} of B's executions did not end within 120 s`);
  const { toEnd } = await executionLatencies(system.sql, ids);
  const restarts = system.runners.filter((r) => r !== runner).length + (runner.running() && runner.pid === pid ? 0 : 1);
  return {
    phase: hostile ?? 'B alone',
    b: summarize(toEnd),
    bStatuses: await statusCounts(system.sql, ids),
    aCreated,
    runnerRestarts: restarts,
  };
}

async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

/** RSS of the runner process and of its children (its sandbox processes), in MiB. */
async function rssMiB(pid: number): Promise<{ runner: number; children: number }> {
  let children = 0;
  for (const child of await childPids(pid)) children += await rssOf(child);
  return { runner: await rssOf(pid), children };
}

interface MemoryRow {
  label: string;
  /** Each bomb's status / error code and its time from started to ended, ms. */
  outcomes: Array<{ status: string; code: string | null; ms: number }>;
  peakChildMb: number;
  runnerPidKept: boolean;
  b: Summary;
  bStatuses: Record<string, number>;
}

/** One memory phase: `sources` run once each (each by an organization of its own) while B creates executions. */
async function memoryPhase(system: System, b: Workload, label: string, sources: string[]): Promise<MemoryRow> {
  const runner = system.runners[0]!;
  const pid = runner.pid;
  const bombs: Array<{ w: Workload; definitionId: string }> = [];
  for (const source of sources) {
    const w = await createWorkload(
      system,
      { start: 'bomb', nodes: { bomb: code(source) } },
      { sessions: 1, quota: 1_000 },
    );
    const definitionId = (
      await command(system, w.account, w.revisionId, 'create_definition', {
        category: 'workflow',
        graph: { start: 'bomb', nodes: { bomb: code(source) } },
      })
    ).definition.id;
    bombs.push({ w, definitionId });
  }
  // The peak resident memory of every sandbox child, sampled from /proc while the phase runs.
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      // A child gone between the listing and the read has no figure (NaN), not a peak of NaN.
      for (const child of await childPids(pid)) peak = Math.max(peak, (await rssOf(child)) || 0);
      await sleep(50);
    }
  })();
  const ids: string[] = [];
  for (const bomb of bombs) {
    ids.push(
      (
        await command(system, bomb.w.account, bomb.w.revisionId, 'create_execution', {
          session_id: bomb.w.sessionIds[0],
          definition_id: bomb.definitionId,
          input_data: null,
        })
      ).execution.id,
    );
  }
  const bIds = await createMany(system, [b], { count: RATE * SECONDS, window: 4, ratePerSecond: RATE });
  await waitForEnd(system.sql, ids, 600_000);
  await waitForEnd(system.sql, bIds, 120_000);
  sampling = false;
  await sampler;
  const { rows } = await system.sql.query<{ status: string; code: string | null; ms: number }>(
    `SELECT status, error->>'code' AS code, extract(epoch FROM ended_at - started_at)::float8 * 1000 AS ms
       FROM executions WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  const { toEnd } = await executionLatencies(system.sql, bIds);
  return {
    label,
    outcomes: rows,
    peakChildMb: peak,
    runnerPidKept: runner.running() && runner.pid === pid && system.runners.length === 1,
    b: summarize(toEnd),
    bStatuses: await statusCounts(system.sql, bIds),
  };
}

interface SandboxFigures {
  isolatesLive: number;
  contexts: number;
  contextsMade: number;
  contextsReused: number;
  isolatesRecycled: number;
}

async function opsSandbox(system: System): Promise<SandboxFigures | null> {
  const res = await fetch(system.opsUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${system.opsToken}` },
    body: JSON.stringify({
      query: '{ runners { alive sandbox { isolatesLive contexts contextsMade contextsReused isolatesRecycled } } }',
    }),
  });
  const body = (await res.json()) as { data?: { runners: Array<{ alive: boolean; sandbox: SandboxFigures | null }> } };
  return body.data?.runners.find((r) => r.alive)?.sandbox ?? null;
}

interface TenantsRow {
  label: string;
  perSecond: number;
  toStart: Summary;
  statuses: Record<string, number>;
}

async function tenantsBatch(system: System, workloads: Workload[], label: string): Promise<TenantsRow> {
  await system.sql.query('VACUUM (ANALYZE)');
  // 64 creates in flight either way, so both batches keep the runner saturated under the same
  // creation pressure (one socket per organization).
  const ids = await createMany(system, workloads, { count: EXECUTIONS, window: 1, inFlight: 64 });
  await waitForEnd(system.sql, ids, 180_000);
  const span = await batchSpan(system.sql, ids);
  const { toStart } = await executionLatencies(system.sql, ids);
  return {
    label,
    perSecond: span.succeeded / span.seconds,
    toStart: summarize(toStart),
    statuses: await statusCounts(system.sql, ids),
  };
}

/** cancel_execution of a spinning execution → the node.finished of the run that waited for its isolate. */
async function cancelSamples(
  system: System,
  a: Workload,
  spinDefinition: string,
  oneDefinition: string,
): Promise<number[]> {
  // One organization may hold `isolates per thread` isolates of each engine thread (the runner's defaults).
  const threads = Math.max(1, Math.min(4, Math.floor(availableParallelism() / 2)));
  const spinners = threads * 4;
  const create = async (definition: string) =>
    (
      await command(system, a.account, a.revisionId, 'create_execution', {
        session_id: a.sessionIds[0],
        definition_id: definition,
        input_data: null,
      })
    ).execution.id as string;
  const running = async (id: string) => {
    for (;;) {
      const { rows } = await system.sql.query(
        "SELECT 1 FROM execution_events WHERE execution_id = $1::uuid AND kind = 'node.started'",
        [id],
      );
      if (rows.length > 0) return;
      await sleep(20);
    }
  };
  // A run of A that ends by itself first: out of probation, A may hold `spinners` isolates.
  await waitForEnd(system.sql, [await create(oneDefinition)], 30_000);
  const spinning: string[] = [];
  for (let i = 0; i < spinners; i++) spinning.push(await create(spinDefinition));
  for (const id of spinning) await running(id);
  const samples: number[] = [];
  for (let i = 0; i < CANCELS; i++) {
    const waiter = await create(oneDefinition);
    await running(waiter);
    await sleep(100); // it is waiting for an isolate of its organization
    const victim = spinning.shift()!;
    await command(system, a.account, a.revisionId, 'cancel_execution', { execution_id: victim });
    await waitForEnd(system.sql, [waiter], 30_000);
    const { rows } = await system.sql.query<{ ms: number }>(
      `SELECT extract(epoch FROM f.at - c.at)::float8 * 1000 AS ms
         FROM execution_events c, execution_events f
        WHERE c.execution_id = $1::uuid AND c.kind = 'execution.finished'
          AND f.execution_id = $2::uuid AND f.kind IN ('node.finished', 'node.failed')`,
      [victim, waiter],
    );
    if (rows[0]) samples.push(Math.max(0, rows[0].ms));
    const next = await create(spinDefinition);
    await running(next);
    spinning.push(next);
  }
  await cancelAll(system, a);
  return samples;
}

export interface IsolationReport {
  rows: string[][];
  notes: string[];
}

/** Runs the three parts on a fresh system; returns report rows [figure, measured, target, met]. */
export async function isolationBench(): Promise<IsolationReport> {
  const rows: string[][] = [];
  const notes: string[] = [];
  const yes = (ok: boolean) => (ok ? 'yes' : 'NO');
  if (PARTS.has('first')) {
    log('first code run of a new organization (in-process isolate pool)');
    rows.push(...(await firstRunRows()));
  }
  log('starting PostgreSQL, the control plane and one runner');
  const system = await startSystem({ runners: 1 });
  try {
    const a = await createWorkload(system, HOSTILE_GRAPHS['for (;;) {}'], { sessions: 4, quota: 1_000_000 });
    await setOverride(system, 'workflow.running_executions_per_org', 'org', a.orgId, HOSTILE);
    const definitions = {} as Record<Hostile, string>;
    for (const [name, graph] of Object.entries(HOSTILE_GRAPHS)) {
      definitions[name as Hostile] = (
        await command(system, a.account, a.revisionId, 'create_definition', { category: 'workflow', graph })
      ).definition.id;
    }
    const oneDefinition = (
      await command(system, a.account, a.revisionId, 'create_definition', {
        category: 'workflow',
        graph: { start: 'one', nodes: { one: code('export default () => 1') } },
      })
    ).definition.id;
    const b = await createWorkload(system, BENCH_GRAPH, { sessions: 8, quota: 1_000_000 });

    log('warm-up');
    await createMany(system, [b], { count: 500, window: 8 }).then((ids) => waitForEnd(system.sql, ids, 60_000));

    if (PARTS.has('cancel')) {
      log('cancel');
      const cancel = summarize(await cancelSamples(system, a, definitions['for (;;) {}'], oneDefinition));
      rows.push([
        `cancel_execution -> isolate running the next run (${cancel.count})`,
        `p50 ${fmt(cancel.p50)} ms, p99 ${fmt(cancel.p99)} ms`,
        'p99 <= 1000 ms',
        yes(cancel.p99 <= 1000),
      ]);
    }

    if (PARTS.has('tenants')) {
      log(`many tenants: ${EXECUTIONS} executions over 1 organization`);
      const one = await tenantsBatch(system, [b], '1 organization');
      log(`many tenants: creating ${TENANTS} organizations`);
      const many: Workload[] = [];
      for (let i = 0; i < TENANTS; i++)
        many.push(await createWorkload(system, BENCH_GRAPH, { sessions: 1, quota: 1_000_000 }));
      await sleep(6000); // one heartbeat carries the runner's sandbox counters to the ops API
      const before = await opsSandbox(system);
      log(`many tenants: ${EXECUTIONS} executions round robin over ${TENANTS} organizations`);
      const spread = await tenantsBatch(system, many, `${TENANTS} organizations`);
      const ratio = spread.perSecond / one.perSecond;
      for (const r of [one, spread]) {
        rows.push([
          `many tenants: ${r.label}, executions/s`,
          `${fmt(r.perSecond, 0)}/s (${Object.entries(r.statuses)
            .map(([s, n]) => `${s} ${n}`)
            .join(', ')})`,
          '-',
          '',
        ]);
        rows.push([
          `many tenants: ${r.label}, create -> first node.started`,
          `p50 ${fmt(r.toStart.p50)} ms, p99 ${fmt(r.toStart.p99)} ms`,
          '-',
          '',
        ]);
      }
      rows.push([`many tenants: ${TENANTS} organizations vs 1`, `x${fmt(ratio, 2)}`, '>= x0.70', yes(ratio >= 0.7)]);
      await sleep(6000); // one heartbeat carries the runner's sandbox to the ops API
      const rss = await rssMiB(system.runners[0]!.pid);
      rows.push([
        'many tenants: runner process RSS at the end',
        `${fmt(rss.runner, 0)} MiB`,
        '<= 512 MiB',
        yes(rss.runner <= 512),
      ]);
      rows.push([
        '    its sandbox child processes (4 isolates of <= 64 MiB heap)',
        `${fmt(rss.children, 0)} MiB`,
        '-',
        '',
      ]);
      // Heartbeats carry the counters at most every 5 s: wait until they count every code run of
      // the batch (three per execution; a run makes a context or reuses one), at most 20 s.
      let sandbox = await opsSandbox(system);
      for (let waited = 0; waited < 20 && sandbox && before; waited++) {
        const runs = sandbox.contextsMade + sandbox.contextsReused - before.contextsMade - before.contextsReused;
        if (runs >= EXECUTIONS * 3) break;
        await sleep(1000);
        sandbox = await opsSandbox(system);
      }
      rows.push([
        'many tenants: isolates / contexts alive at the end',
        sandbox ? `${sandbox.isolatesLive} / ${sandbox.contexts}` : '-',
        '-',
        '',
      ]);
      if (sandbox && before) {
        const made = sandbox.contextsMade - before.contextsMade;
        const reused = sandbox.contextsReused - before.contextsReused;
        rows.push([
          `    ${TENANTS} organizations: contexts made / reused, isolates recycled`,
          `${made} / ${reused}, ${sandbox.isolatesRecycled - before.isolatesRecycled}`,
          '-',
          '',
        ]);
      }
    }
    if (PARTS.has('neighbour')) {
      log(`noisy neighbour: B alone, ${RATE}/s for ${SECONDS} s`);
      const alone = await neighbourPhase(system, a, b, null, definitions);
      const phases: NeighbourRow[] = [];
      for (const hostile of Object.keys(HOSTILE_GRAPHS) as Hostile[]) {
        log(`noisy neighbour: A ${hostile}`);
        phases.push(await neighbourPhase(system, a, b, hostile, definitions));
      }
      const target = 2 * alone.b.p99 + 50;
      rows.push([
        `noisy neighbour: B alone, create -> succeeded`,
        `p50 ${fmt(alone.b.p50)} ms, p99 ${fmt(alone.b.p99)} ms`,
        '-',
        '',
      ]);
      for (const p of phases) {
        const ok = p.b.p99 <= target && p.runnerRestarts === 0 && (p.bStatuses.succeeded ?? 0) === RATE * SECONDS;
        rows.push([
          `noisy neighbour: A ${p.phase} (${p.aCreated} created), B`,
          `p50 ${fmt(p.b.p50)} ms, p99 ${fmt(p.b.p99)} ms, restarts ${p.runnerRestarts}, B ${Object.entries(p.bStatuses)
            .map(([s, n]) => `${s} ${n}`)
            .join(', ')}`,
          `p99 <= ${fmt(target, 0)} ms, 0 restarts, all succeeded`,
          yes(ok),
        ]);
      }
      const cooled = await system.sql.query<{ strikes: number }>(
        'SELECT strikes FROM sandbox_cooldowns WHERE org_id = $1::uuid',
        [a.orgId],
      );
      notes.push(
        `organization A after the phases: ${cooled.rows[0] ? `cooled down, ${cooled.rows[0].strikes} strike(s)` : 'not cooled down'}`,
      );
    }
    if (PARTS.has('memory')) {
      log(`memory: B alone, ${RATE}/s for ${SECONDS} s`);
      const alone = await neighbourPhase(system, a, b, null, definitions);
      const target = 2 * alone.b.p99 + 50;
      rows.push([
        `memory: B alone, create -> succeeded`,
        `p50 ${fmt(alone.b.p50)} ms, p99 ${fmt(alone.b.p99)} ms`,
        '-',
        '',
      ]);
      const phases: MemoryRow[] = [];
      log(`memory: ${CONTROL_LABEL}`);
      phases.push(await memoryPhase(system, b, CONTROL_LABEL, [CONTROL]));
      for (const [name, source] of Object.entries(ALLOCATORS)) {
        log(`memory: ${name}`);
        phases.push(await memoryPhase(system, b, name, [source]));
      }
      log('memory: all five at once');
      phases.push(await memoryPhase(system, b, 'all five at once', Object.values(ALLOCATORS)));
      for (const p of phases) {
        const outcome = p.outcomes.map((o) => (o.status === 'failed' ? (o.code ?? 'failed') : o.status)).join(', ');
        if (p.label === CONTROL_LABEL) {
          rows.push([
            `memory: ${p.label}: outcome; B meanwhile, create -> succeeded`,
            `${outcome}; p50 ${fmt(p.b.p50)} ms, p99 ${fmt(p.b.p99)} ms, B ${Object.entries(p.bStatuses)
              .map(([s, n]) => `${s} ${n}`)
              .join(', ')}`,
            `p99 <= ${fmt(target, 0)} ms, all succeeded`,
            yes(p.b.p99 <= target && (p.bStatuses.succeeded ?? 0) === RATE * SECONDS),
          ]);
          continue;
        }
        const slowest = Math.max(...p.outcomes.map((o) => o.ms));
        const failed = p.outcomes.every((o) => o.status === 'failed');
        rows.push([
          `memory: ${p.label} (4 GiB): outcome, time to fail`,
          `${outcome}; ${fmt(slowest / 1000, 1)} s`,
          'failed, <= 5 s',
          yes(failed && slowest <= 5000),
        ]);
        rows.push([
          '    peak sandbox child RSS, runner pid',
          `${fmt(p.peakChildMb, 0)} MiB (bound ${DEFAULT_BOUND_MB}), pid ${p.runnerPidKept ? 'unchanged' : 'CHANGED'}`,
          `<= ${DEFAULT_BOUND_MB} MiB, unchanged`,
          yes(p.peakChildMb <= DEFAULT_BOUND_MB && p.runnerPidKept),
        ]);
        const bOk = p.b.p99 <= target && (p.bStatuses.succeeded ?? 0) === RATE * SECONDS;
        rows.push([
          '    B meanwhile, create -> succeeded',
          `p50 ${fmt(p.b.p50)} ms, p99 ${fmt(p.b.p99)} ms, B ${Object.entries(p.bStatuses)
            .map(([s, n]) => `${s} ${n}`)
            .join(', ')}`,
          `p99 <= ${fmt(target, 0)} ms, all succeeded`,
          yes(bOk),
        ]);
      }
    }
  } finally {
    await system.stop();
  }
  return { rows, notes };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let code = 0;
  try {
    const report = await isolationBench();
    process.stdout.write(
      `\n${table([['figure', 'measured', 'target', 'met'], ...report.rows])}\n${report.notes.join('\n')}\n`,
    );
  } catch (error) {
    code = 1;
    log(`failed: ${error instanceof Error ? error.stack : String(error)}`);
  }
  process.exit(code);
}
