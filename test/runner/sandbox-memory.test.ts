/**
 * The sandbox children's memory bound (sandbox/memory-bound.ts, docs/sandbox.md "Memory"), through
 * the API: code that would grow its sandbox process outside every isolate's heap bound — Intl
 * objects, Intl.Segmenter results, resizable ArrayBuffers, generated code, run-time Unicode
 * property escapes, each asking for 4 GiB — fails its run at a run cap inside the isolate without
 * costing its child; what the caps allow, held past a lower memory bound, fails `code_memory`, while
 * another organization's executions succeed on the same runner; only sandbox children are replaced
 * (the runner keeps its pid, PostgreSQL its start time); the ops API shows the mechanism in force.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { registerRunner } from '../../shared/runner-registry.ts';
import { buildTestApp, setOverride, signInAnonymous } from '../helpers/app.ts';
import { opsData, startOpsApp } from '../helpers/ops.ts';
import {
  createWorkflow,
  define,
  getExecution,
  runGraph,
  startExecution,
  startEngine,
  waitFor,
  waitForEnd,
} from '../helpers/runner.ts';

// Five bombs in a niced child: minutes on a saturated host (BOMB_WAIT_MS).
t.setTimeout(80 * 60_000);
const { app, databaseUrl, db, config } = await buildTestApp(t);
/**
 * How long a bomb may take to reach the bound: the sandbox child runs niced below the runner, so
 * on a host saturated by other work its code gets a small share of a CPU.
 */
const BOMB_WAIT_MS = 15 * 60_000;
const mallory = await signInAnonymous(app);
const bob = await signInAnonymous(app);

/**
 * Each asks for ≈ 4 GiB outside the isolate's 64 MiB heap bound, and the run caps inside the
 * isolate (sandbox/run-caps-source.ts) refuse it: the run fails `code_error` naming the bound.
 */
const ALLOCATORS: Record<string, string> = {
  'Intl objects': `export default () => { const kept = []; for (let i = 0; i < 160000; i++) kept.push(new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' })); return kept.length }`,
  'Intl.Segmenter results': `export default () => { const s = 'a'.repeat(3e6); const g = new Intl.Segmenter(); const kept = []; for (let i = 0; i < 700; i++) kept.push(g.segment(s)); return kept.length }`,
  'resizable ArrayBuffers': `export default () => { const kept = []; for (let i = 0; i < 16; i++) { const b = new ArrayBuffer(2 ** 28, { maxByteLength: 2 ** 28 }); new Uint8Array(b).fill(1); kept.push(b) } return kept.length }`,
  'generated code': `export default () => { const kept = []; for (let i = 0; i < 64; i++) kept.push(new Function('return [' + '[1,2,3,4],'.repeat(8e5) + ']')); return kept.length }`,
  'run-time property escapes': `export default () => new RegExp('[' + '\\\\p{RGI_Emoji}'.repeat(4500) + ']', 'v').test('x')`,
};
const RUN_BOUND = /maxOutsideHeapBytes|maxIntlObjects|maxSegmentedChars|maxSourceChars|maxPropertyEscapes/;
/**
 * What the caps allow one run (its heap, 64 MiB outside it), held: past a sandbox memory bound set
 * below the child's resting size plus that, so the operating system's bound is what ends it.
 */
const HELD = `export default () => {
  const outside = new ArrayBuffer(60 * 2 ** 20, { maxByteLength: 60 * 2 ** 20 });
  new Uint8Array(outside).fill(1);
  const heap = [];
  for (let i = 0; i < 50; i++) heap.push(new Uint8Array(2 ** 20).fill(1));
  const until = Date.now() + 60_000;
  while (Date.now() < until) {}
  return heap.length;
}`;
const BOUND_MB = 170;

function code(source: string, routes?: Record<string, string | null>): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source }, ...(routes ? { routes } : {}) };
}

const THREE = {
  start: 'a',
  nodes: {
    a: code('export default () => 1', { success: 'b' }),
    b: code('export default (n) => n + 1', { success: 'c' }),
    c: code('export default (n) => n + 1'),
  },
};

const graphql = (ops: FastifyInstance, query: string) => opsData(ops, config, query);

async function postmasterStart(): Promise<string> {
  const { rows } = await db.query<{ at: string }>('SELECT pg_postmaster_start_time()::text AS at');
  return rows[0]!.at;
}

/**
 * Pids of this process's child processes: the sandbox children of its runner's engine threads,
 * which are the children of those threads' tasks, not of the main thread's.
 */
function childPids(): number[] {
  const out: number[] = [];
  for (const task of readdirSync(`/proc/${process.pid}/task`)) {
    let children: string;
    try {
      children = readFileSync(`/proc/${process.pid}/task/${task}/children`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    for (const child of children.trim().split(/\s+/)) if (child !== '') out.push(Number(child));
  }
  return out.sort((a, b) => a - b);
}

t.test(
  'each allocator fails its run at a run cap, without replacing its child; another organization runs meanwhile',
  async (t) => {
    await startEngine(t, databaseUrl, { sandboxMemoryMb: 300 });
    const pid = process.pid;
    const postgres = await postmasterStart();

    const flow = await createWorkflow(app, bob);
    await setOverride(app, 'workflow.running_executions_per_org', 'org', flow.orgId, 50);
    const three = await define(app, bob, flow, THREE);
    // Organization B's three-node executions, one after another, all the while.
    let bombing = true;
    const others: Array<Record<string, any>> = [];
    const other = (async () => {
      while (bombing || others.length === 0) {
        others.push(await waitForEnd(app, bob, flow, (await startExecution(app, bob, flow, three)).id));
      }
    })();

    // Children start with the first runs: B's first execution has them all.
    await waitFor(
      async () => others.length,
      (n) => n > 0,
      "B's first execution",
      BOMB_WAIT_MS,
    );
    const before = childPids();
    for (const [name, source] of Object.entries(ALLOCATORS)) {
      const hostile = await createWorkflow(app, mallory);
      const { id } = await runGraph(app, mallory, hostile, { start: 'bomb', nodes: { bomb: code(source) } });
      const ended = await waitFor(
        () => getExecution(app, mallory, hostile, id),
        (execution) => execution.status !== 'running' && execution.status !== 'queued',
        `the ${name} execution to end`,
        BOMB_WAIT_MS,
      );
      t.equal(ended.status, 'failed', name);
      t.equal(ended.error?.code, 'code_error', `${name}: ${JSON.stringify(ended.error)}`);
      t.match(ended.error?.message, RUN_BOUND, `${name}: the message names the run's bound`);
    }
    bombing = false;
    await other;
    t.ok(others.length > 0);
    t.same(
      others.filter((ended) => ended.status !== 'succeeded' || ended.output !== 3),
      [],
      "every one of the other organization's executions succeeded",
    );
    t.equal(process.pid, pid, 'the runner kept its process');
    t.equal(await postmasterStart(), postgres, 'PostgreSQL was not restarted');
    t.ok(before.length > 0, 'the runner has sandbox children');
    t.same(childPids(), before, 'no sandbox child was replaced');
  },
);

t.test(
  'what the run caps allow, held past a lower memory bound, fails code_memory and only its sandbox child is replaced',
  async (t) => {
    const { ops } = await startOpsApp(t, { config, db, databaseUrl });
    const runner = await startEngine(t, databaseUrl, { sandboxMemoryMb: BOUND_MB });
    const registration = await registerRunner(
      db,
      { host: 'memory-host', pid: process.pid, version: 'test' },
      () => {},
      () => runner.engine.sandbox(),
    );
    t.teardown(() => registration.stop());
    const pid = process.pid;
    const postgres = await postmasterStart();
    const hostile = await createWorkflow(app, mallory);
    // Children start with the first runs.
    const first = await runGraph(app, mallory, hostile, { start: 'a', nodes: { a: code('export default () => 1') } });
    await waitFor(
      () => getExecution(app, mallory, hostile, first.id),
      (execution) => execution.status === 'succeeded',
      'a first execution',
      BOMB_WAIT_MS,
    );
    const before = childPids();
    t.ok(before.length > 0, 'the runner has sandbox children');
    const { id } = await runGraph(app, mallory, hostile, { start: 'bomb', nodes: { bomb: code(HELD) } });
    const ended = await waitFor(
      () => getExecution(app, mallory, hostile, id),
      (execution) => execution.status !== 'running' && execution.status !== 'queued',
      'the held execution to end',
      BOMB_WAIT_MS,
    );
    t.equal(ended.status, 'failed');
    t.equal(ended.error?.code, 'code_memory', JSON.stringify(ended.error));
    t.match(ended.error?.message, /memory bound/, 'the message names the bound');
    t.equal(process.pid, pid, 'the runner kept its process');
    t.equal(await postmasterStart(), postgres, 'PostgreSQL was not restarted');
    t.ok(
      before.some((child) => !childPids().includes(child)),
      "the held run's sandbox child was replaced",
    );

    const reported = await waitFor(
      async () =>
        (await graphql(ops, '{ runners { host sandbox { memoryKills memoryBound { mechanism boundMb detail } } } }'))
          .runners,
      (runners: any[]) => runners.some((r) => r.host === 'memory-host' && r.sandbox?.memoryKills >= 1),
      'the runner to report a memory kill with a heartbeat',
    );
    const sandbox = reported.find((r: any) => r.host === 'memory-host').sandbox;
    t.ok(['cgroup-v2', 'rss-watchdog'].includes(sandbox.memoryBound.mechanism), 'the mechanism in force');
    t.equal(sandbox.memoryBound.boundMb, BOUND_MB);
    t.match(sandbox.memoryBound.detail, new RegExp(`${BOUND_MB} MiB`));
  },
);
