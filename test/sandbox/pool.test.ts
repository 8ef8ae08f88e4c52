import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { IsolatePool } from '../../sandbox/isolate-pool.ts';
import { runCode } from '../../sandbox/sandbox.ts';
import { fakeHost, request, testDisposal, testPool, until } from './fake-host.ts';

const pools: IsolatePool[] = [];
const trivial = request('export default (input) => input', { input: 1 });

t.test('warm() prepares idle isolates and runs reuse them', async (t) => {
  const pool = testPool(t, { size: 2, warm: 2 }, pools);
  await pool.warm();
  t.match(pool.stats(), { created: 2, idle: 2, live: 2 });
  for (let i = 0; i < 5; i++) t.match(await runCode(pool, trivial, fakeHost()), { kind: 'output', output: 1 });
  t.match(pool.stats(), { created: 2, runs: 5, retired: 0 });
});

t.test('an isolate is retired after maxRunsPerIsolate runs', async (t) => {
  const pool = testPool(t, { size: 1, maxRunsPerIsolate: 3 }, pools);
  for (let i = 0; i < 4; i++) await runCode(pool, trivial, fakeHost());
  t.match(pool.stats(), { created: 2, retired: 1, recycled: 1, runs: 4 });
});

t.test('an isolate whose heap grew past maxHeapBytes is retired', async (t) => {
  const pool = testPool(t, { size: 1, maxHeapBytes: 1 }, pools);
  await runCode(pool, trivial, fakeHost());
  await runCode(pool, trivial, fakeHost());
  t.match(pool.stats(), { created: 2, recycled: 2, live: 0 });
});

t.test('runs past `size` wait for an isolate', async (t) => {
  const pool = testPool(t, { size: 1 }, pools);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const host = fakeHost();
  let asked = false;
  const slow = {
    ...host,
    graph: {
      ...host.graph,
      query: async () => {
        asked = true;
        return gate.then(() => 'opened');
      },
    },
  };
  const first = runCode(pool, request('export default (i, ctx) => ctx.graph.query({})'), slow);
  await until(() => asked, 'the first run to call its host');
  const second = runCode(pool, trivial, fakeHost());
  await until(() => pool.stats().waiting > 0 || pool.stats().created > 1, 'the second run to wait or get an isolate');
  t.match(pool.stats(), { busy: 1, waiting: 1, created: 1 });
  release();
  t.match(await first, { kind: 'output', output: 'opened' });
  t.match(await second, { kind: 'output', output: 1 });
  t.match(pool.stats(), { waiting: 0, created: 1 });
});

t.test('host calls the code did not await have landed when the run ends', async (t) => {
  const pool = testPool(t, {}, pools);
  const host = fakeHost();
  const put = host.objects.put;
  const slow = {
    ...host,
    objects: { ...host.objects, put: async (alias: string, value: unknown) => sleep(50).then(() => put(alias, value)) },
  };
  const result = await runCode(
    pool,
    request("export default (i, ctx) => { ctx.objects.put('late', 1); return 'returned' }"),
    slow,
  );
  t.match(result, { kind: 'output', output: 'returned' });
  t.same(host.objectsStore.get('late'), 1);
});

t.test('a host call that never answers ends in code_timeout after a bounded wait', async (t) => {
  const pool = testPool(t, { hostSettleMs: 50 }, pools);
  const host = fakeHost();
  const stuck = { ...host, objects: { ...host.objects, get: () => new Promise<never>(() => {}) } };
  const result = await runCode(
    pool,
    request("export default (i, ctx) => ctx.objects.get('a')", { timeoutMs: 200 }),
    stuck,
  );
  t.match(result, { kind: 'error', error: { code: 'code_timeout' } });
  t.match(await runCode(pool, trivial, fakeHost()), { kind: 'output', output: 1 });
});

t.test('disposing the pool stops busy runs and refuses new ones', async (t) => {
  const pool = new IsolatePool({ size: 1, memoryMb: 32, hostSettleMs: 50 });
  pools.push(pool);
  const host = fakeHost();
  let asked = false;
  const stuck = {
    ...host,
    objects: {
      ...host.objects,
      get: () => {
        asked = true;
        return new Promise<never>(() => {});
      },
    },
  };
  const busy = runCode(pool, request("export default (i, ctx) => ctx.objects.get('a')"), stuck);
  await until(() => asked, 'the busy run to call its host');
  const waiting = runCode(pool, trivial, fakeHost());
  await until(() => pool.stats().waiting > 0, 'the second run to wait');
  await pool.dispose();
  const stopped = await busy;
  t.same(stopped.kind === 'error' && stopped.error, {
    code: 'internal_error',
    message: 'The sandbox was shut down during the run.',
  });
  t.match(await waiting, { kind: 'error', error: { code: 'internal_error', message: 'The sandbox is shut down.' } });
  t.match(await runCode(pool, trivial, fakeHost()), {
    kind: 'error',
    error: { code: 'internal_error', message: 'The sandbox is shut down.' },
  });
  t.match(pool.stats(), { live: 0, undisposed: 0, waiting: 0 });
});

t.test('work that never unwinds after a stop degrades the pool', async (t) => {
  const reasons: string[] = [];
  const pool = new IsolatePool({ abandonGraceMs: 10, onDegraded: (reason) => reasons.push(reason) });
  t.teardown(() => pool.dispose());
  pool.watchStopped(new Promise(() => {}));
  pool.watchStopped(Promise.resolve());
  await sleep(50);
  t.match(pool.stats(), { abandoned: 1, degraded: true });
  t.equal(reasons.length, 1);
  t.match(reasons[0], /did not stop/);
});

testDisposal(t, pools);
