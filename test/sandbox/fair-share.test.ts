/**
 * Fair share of a pool's isolates between tenants (sandbox/fair-queue.ts, sandbox/isolate-pool.ts):
 * a tenant alone uses every isolate, never more than `size`; a tenant holding none gets one even
 * when another tenant's runs hold them all; waiting runs go out fairest first; an aborted run
 * leaves the queue or its isolate at once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { FairQueue } from '../../sandbox/fair-queue.ts';
import type { IsolatePool } from '../../sandbox/isolate-pool.ts';
import { runCode } from '../../sandbox/sandbox.ts';
import { fakeHost, request, testDisposal, testPool, type FakeHost } from './fake-host.ts';

const pools: IsolatePool[] = [];

/** A host whose `objects.get` answers only when `open()` is called: a run that holds its isolate as long as a test wants. */
function gatedHost(): { host: FakeHost; open: () => void } {
  const host = fakeHost();
  let open!: () => void;
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { host: { ...host, objects: { ...host.objects, get: async () => gate.then(() => 'opened') } }, open };
}

const holding = "export default (i, ctx) => ctx.objects.get('gate')";

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await sleep(10);
}

/** One run of `tenant` that ends by itself: the tenant is out of probation in `pool`. */
async function trust(pool: IsolatePool, tenant: string): Promise<void> {
  await runCode(pool, request('export default () => 0', { tenant }), fakeHost());
}

t.test('the queue serves the tenant with the least isolate time first, a new tenant before a busy one', async (t) => {
  const queue = new FairQueue<string>();
  queue.started('a', 0);
  queue.finished('a', 0, 100);
  queue.started('a', 100);
  queue.enqueue('a', 'a1');
  queue.enqueue('a', 'a2');
  queue.enqueue('b', 'b1');
  queue.enqueue('b', 'b2');
  const any = () => true;
  // a has used 100 ms and holds a run started at 100; b arrived with nothing used.
  t.same(queue.dequeue(any, 150), { tenant: 'b', waiter: 'b1' });
  queue.started('b', 150);
  queue.finished('b', 150, 160);
  t.same(queue.dequeue(any, 160), { tenant: 'b', waiter: 'b2' }, "b has used 10 ms against a's 160");
  t.same(queue.dequeue(any, 160), { tenant: 'a', waiter: 'a1' });
  t.equal(queue.waiting, 1);
  t.same(
    queue.dequeue((tenant) => tenant !== 'a', 160),
    undefined,
    'an ineligible tenant is skipped',
  );
  t.equal(queue.remove('a', 'a2'), true);
  t.equal(queue.remove('a', 'a2'), false);
  t.equal(queue.waiting, 0);
  t.same(queue.waitingByTenant(), [{ tenant: 'a', waiting: 0, busy: 1 }]);
});

t.test('locality: a tenant whose context the freed isolate keeps goes first only within the slack', async (t) => {
  const queue = new FairQueue<string>();
  queue.started('near', 0);
  queue.finished('near', 0, 15);
  queue.enqueue('near', 'n1');
  queue.enqueue('fair', 'f1');
  const any = () => true;
  const local = (tenant: string) => tenant === 'near';
  t.same(queue.dequeue(any, 15, local, 20), { tenant: 'near', waiter: 'n1' }, '15 ms behind, within a 20 ms slack');
  queue.started('near', 15);
  queue.finished('near', 15, 30);
  queue.enqueue('near', 'n2');
  t.same(queue.dequeue(any, 30, local, 20), { tenant: 'fair', waiter: 'f1' }, '30 ms behind: the fairest goes first');
});

t.test('a tenant that comes back after idling gets no credit for the time it was away', async (t) => {
  const queue = new FairQueue<string>();
  // b works for a long time while a is away.
  for (let i = 0; i < 10; i++) {
    queue.enqueue('b', `b${i}`);
    queue.dequeue(() => true, i * 100);
    queue.started('b', i * 100);
    queue.finished('b', i * 100, i * 100 + 100);
  }
  queue.enqueue('b', 'b-next');
  queue.enqueue('a', 'a-first');
  queue.enqueue('a', 'a-second');
  t.same(
    queue.dequeue(() => true, 1000),
    { tenant: 'a', waiter: 'a-first' },
    'the returning tenant goes first',
  );
  queue.started('a', 1000);
  queue.finished('a', 1000, 1200);
  // a started at the clock (b's time at its last dispatch, 900) and has used 200 ms: b (1000) goes next.
  t.same(
    queue.dequeue(() => true, 1200),
    { tenant: 'b', waiter: 'b-next' },
  );
});

t.test('a tenant alone may use every isolate, and no more than size', async (t) => {
  const pool = testPool(t, { size: 2, maxIsolates: 4 }, pools);
  await trust(pool, 'org-a');
  const gate = gatedHost();
  const runs = [1, 2, 3].map(() => runCode(pool, request(holding, { tenant: 'org-a', timeoutMs: 10_000 }), gate.host));
  await until(() => pool.stats().waiting === 1);
  t.match(pool.stats(), { busy: 2, waiting: 1, live: 2, tenants: [{ tenant: 'org-a', waiting: 1, busy: 2 }] });
  gate.open();
  for (const run of runs) t.match(await run, { kind: 'output', output: 'opened' });
});

t.test("a tenant holding no isolate gets one while another tenant's runs hold them all", async (t) => {
  const pool = testPool(t, { size: 2, maxIsolates: 3 }, pools);
  await trust(pool, 'org-a');
  const gate = gatedHost();
  const hog = [1, 2, 3].map(() => runCode(pool, request(holding, { tenant: 'org-a', timeoutMs: 10_000 }), gate.host));
  await until(() => pool.stats().busy === 2);
  // org-b finishes runs while org-a's hold every isolate of `size`.
  for (let i = 0; i < 3; i++)
    t.match(await runCode(pool, request('export default () => 42', { tenant: 'org-b' }), fakeHost()), {
      kind: 'output',
      output: 42,
    });
  t.match(pool.stats(), { live: 3, waiting: 1 });
  // With maxIsolates reached, a third tenant waits, and goes before org-a's waiting run.
  const gateC = gatedHost();
  const c = runCode(pool, request(holding, { tenant: 'org-c', timeoutMs: 10_000 }), gateC.host);
  const d = runCode(pool, request('export default () => 4', { tenant: 'org-d' }), fakeHost());
  await until(() => pool.stats().busy === 3 && pool.stats().waiting === 2);
  t.match(pool.stats(), { live: 3, busy: 3, waiting: 2 });
  gateC.open();
  t.match(await c, { kind: 'output', output: 'opened' });
  t.match(await d, { kind: 'output', output: 4 });
  t.match(pool.stats().tenants, [{ tenant: 'org-a', waiting: 1, busy: 2 }], "org-d went before org-a's third run");
  gate.open();
  for (const run of hog) t.match(await run, { kind: 'output', output: 'opened' });
});

t.test('probation: a tenant none of whose runs ended by itself holds one isolate at a time', async (t) => {
  const pool = testPool(t, { size: 2, maxIsolates: 4, hostSettleMs: 20 }, pools);
  // Two endless loops of a new tenant: one runs, the other waits; both are stopped at their deadline.
  const loops = [1, 2].map(() =>
    runCode(pool, request('export default () => { for (;;) {} }', { tenant: 'org-new', timeoutMs: 300 }), fakeHost()),
  );
  await until(() => pool.stats().waiting === 1);
  t.match(pool.stats().tenants, [{ tenant: 'org-new', waiting: 1, busy: 1 }]);
  for (const loop of loops) t.match(await loop, { kind: 'error', error: { code: 'code_timeout' } });
  // Still on probation: a stopped run earns nothing. A run that ends by itself does.
  const gate = gatedHost();
  const gated = [1, 2].map(() => runCode(pool, request(holding, { tenant: 'org-new', timeoutMs: 10_000 }), gate.host));
  await until(() => pool.stats().waiting === 1);
  t.match(pool.stats().tenants, [{ tenant: 'org-new', waiting: 1, busy: 1 }]);
  gate.open();
  for (const run of gated) t.match(await run, { kind: 'output', output: 'opened' });
  const next = gatedHost();
  const both = [1, 2].map(() => runCode(pool, request(holding, { tenant: 'org-new', timeoutMs: 10_000 }), next.host));
  await until(() => pool.stats().busy === 2);
  t.match(pool.stats().tenants, [{ tenant: 'org-new', waiting: 0, busy: 2 }], 'trusted: both run at once');
  next.open();
  for (const run of both) t.match(await run, { kind: 'output', output: 'opened' });
  // A stopped run puts it back on probation.
  t.match(
    await runCode(
      pool,
      request('export default () => { for (;;) {} }', { tenant: 'org-new', timeoutMs: 200 }),
      fakeHost(),
    ),
    { kind: 'error', error: { code: 'code_timeout' } },
  );
  const again = gatedHost();
  const after = [1, 2].map(() => runCode(pool, request(holding, { tenant: 'org-new', timeoutMs: 10_000 }), again.host));
  await until(() => pool.stats().waiting === 1);
  t.match(pool.stats().tenants, [{ tenant: 'org-new', waiting: 1, busy: 1 }], 'one at a time again');
  again.open();
  for (const run of after) t.match(await run, { kind: 'output', output: 'opened' });
});

t.test('a run a run cap refused puts its tenant on probation, even when its code caught the error', async (t) => {
  const pool = testPool(t, { size: 2, maxIsolates: 4 }, pools);
  await trust(pool, 'org-capped');
  // Caught and returned from: the run ends by itself, yet it asked for more than a cap allows.
  const caught = `export default () => {
    try { new ArrayBuffer(0, { maxByteLength: 2 ** 40 }); } catch (error) { return error.name; }
  }`;
  t.match(await runCode(pool, request(caught, { tenant: 'org-capped' }), fakeHost()), {
    kind: 'output',
    output: 'RangeError',
  });
  const gate = gatedHost();
  const held = [1, 2].map(() =>
    runCode(pool, request(holding, { tenant: 'org-capped', timeoutMs: 10_000 }), gate.host),
  );
  await until(() => pool.stats().waiting === 1);
  t.match(pool.stats().tenants, [{ tenant: 'org-capped', waiting: 1, busy: 1 }], 'one isolate at a time');
  gate.open();
  for (const run of held) t.match(await run, { kind: 'output', output: 'opened' });
  // Its runs since ended by themselves within every cap: trusted again.
  const next = gatedHost();
  const both = [1, 2].map(() =>
    runCode(pool, request(holding, { tenant: 'org-capped', timeoutMs: 10_000 }), next.host),
  );
  await until(() => pool.stats().busy === 2);
  t.match(pool.stats().tenants, [{ tenant: 'org-capped', waiting: 0, busy: 2 }], 'trusted: both run at once');
  next.open();
  for (const run of both) t.match(await run, { kind: 'output', output: 'opened' });
  // A cap refused at the module's top level fails the module's task: probation all the same.
  t.match(
    await runCode(
      pool,
      request('new ArrayBuffer(0, { maxByteLength: 2 ** 40 }); export default () => 1', { tenant: 'org-capped' }),
      fakeHost(),
    ),
    { kind: 'error', error: { code: 'code_error', message: /maxOutsideHeapBytes/ } },
  );
  const last = gatedHost();
  const again = [1, 2].map(() =>
    runCode(pool, request(holding, { tenant: 'org-capped', timeoutMs: 10_000 }), last.host),
  );
  await until(() => pool.stats().waiting === 1);
  t.match(pool.stats().tenants, [{ tenant: 'org-capped', waiting: 1, busy: 1 }], 'one isolate at a time again');
  last.open();
  for (const run of again) t.match(await run, { kind: 'output', output: 'opened' });
});

t.test('an extra isolate is retired after it idled', async (t) => {
  const pool = testPool(t, { size: 1, maxIsolates: 2, extraIdleMs: 20 }, pools);
  const gate = gatedHost();
  const hog = runCode(pool, request(holding, { tenant: 'org-a', timeoutMs: 10_000 }), gate.host);
  await until(() => pool.stats().busy === 1);
  t.match(await runCode(pool, request('export default () => 1', { tenant: 'org-b' }), fakeHost()), {
    kind: 'output',
    output: 1,
  });
  t.equal(pool.stats().live, 2);
  await until(() => pool.stats().live === 1);
  t.match(pool.stats(), { live: 1, busy: 1 });
  gate.open();
  await hog;
});

t.test('an aborted run leaves the queue, or its isolate, at once', async (t) => {
  const pool = testPool(t, { size: 1, maxIsolates: 1, hostSettleMs: 20 }, pools);
  const loop = new AbortController();
  const looping = runCode(
    pool,
    request('export default () => { for (;;) {} }', { tenant: 'org-a', timeoutMs: 60_000 }),
    fakeHost(),
    loop.signal,
  );
  await until(() => pool.stats().busy === 1);
  const queued = new AbortController();
  const waiting = runCode(pool, request('export default () => 1', { tenant: 'org-b' }), fakeHost(), queued.signal);
  await until(() => pool.stats().waiting === 1);
  queued.abort();
  t.match(await waiting, { kind: 'error', error: { code: 'code_aborted' } });
  t.equal(pool.stats().waiting, 0);
  loop.abort();
  t.match(await looping, { kind: 'error', error: { code: 'code_aborted' } });
  t.match(
    await runCode(pool, request('export default () => 2', { tenant: 'org-b' }), fakeHost()),
    { kind: 'output', output: 2 },
    'the isolate is free again',
  );
  const before = new AbortController();
  before.abort();
  t.match(await runCode(pool, request('export default () => 3'), fakeHost(), before.signal), {
    kind: 'error',
    error: { code: 'code_aborted' },
  });
});

t.test('with a context per tenant, kept contexts are bounded by bytes at their measured size', async (t) => {
  const pool = testPool(t, { size: 1, contexts: 'tenant', contextBytesPerIsolate: 2 * 1024 * 1024 }, pools);
  for (let i = 0; i < 30; i++)
    t.match(await runCode(pool, request('export default () => 1', { tenant: `org-${i}` }), fakeHost()), {
      kind: 'output',
      output: 1,
    });
  const stats = pool.stats();
  t.ok(stats.contextBytes > 32 * 1024, `a context was measured (${stats.contextBytes} bytes)`);
  t.ok(
    stats.contexts * stats.contextBytes <= 2 * 1024 * 1024 + stats.contextBytes,
    `${stats.contexts} contexts fit 2 MiB`,
  );
  t.ok(stats.contextsEvicted > 0, 'the least recently used ones were evicted');
  // The most recent tenant's context is still kept.
  t.match(await runCode(pool, request('export default () => 2', { tenant: 'org-29' }), fakeHost()), {
    kind: 'output',
    output: 2,
  });
  t.equal(pool.stats().contextsReused, stats.contextsReused + 1);
});

testDisposal(t, pools);
