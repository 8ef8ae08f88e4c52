/**
 * Code that tries to leave the isolate or exhaust it. Each attempt must be refused or stopped,
 * and the pool must serve the next run normally. Allocation bombs that can park an isolate
 * thread for good run in a child process instead (bombs.test.ts).
 */
import t, { type Test } from 'tap';
import type { IsolatePool } from '../../sandbox/isolate-pool.ts';
import type { CodeResult } from '../../sandbox/messages.ts';
import { runCode } from '../../sandbox/sandbox.ts';
import { fakeHost, request, testDisposal, testPool } from './fake-host.ts';

const pool = testPool(t, { size: 1, bounds: { maxCalls: 100 } });

async function stillWorks(t: Test, pool: IsolatePool): Promise<void> {
  const next = await runCode(
    pool,
    request('export default (input) => ({ echo: input })', { input: 'next' }),
    fakeHost(),
  );
  t.match(next, { kind: 'output', output: { echo: 'next' } }, 'the pool serves the next run');
}

function output(result: CodeResult): unknown {
  return result.kind === 'output' ? result.output : result;
}

t.test('the Function constructor finds no process', async (t) => {
  t.match(
    await runCode(
      pool,
      request("export default () => globalThis.constructor.constructor('return process')()"),
      fakeHost(),
    ),
    {
      kind: 'error',
      error: { code: 'code_error', message: 'ReferenceError: process is not defined' },
    },
  );
  t.same(
    output(
      await runCode(
        pool,
        request(
          "export default () => [({}).constructor.constructor('return typeof process')(), (() => {}).constructor('return typeof require')()]",
        ),
        fakeHost(),
      ),
    ),
    ['undefined', 'undefined'],
  );
  await stillWorks(t, pool);
});

t.test('no ctx function, promise or host answer leads out of the isolate', async (t) => {
  const code = `export default async (input, ctx) => {
    const fns = {
      'objects.get': ctx.objects.get, 'objects.put': ctx.objects.put, 'objects.list': ctx.objects.list,
      'thread.post': ctx.thread.post, 'graph.mutate': ctx.graph.mutate, 'graph.query': ctx.graph.query,
      log: ctx.log, 'log.info': ctx.log.info, route: ctx.route, LimitExceeded: ctx.LimitExceeded,
      'console.log': console.log, getRandomValues: crypto.getRandomValues,
    };
    const out = {};
    for (const [name, fn] of Object.entries(fns)) {
      out[name] = [
        fn.constructor === Function || fn.constructor === Function.prototype.constructor,
        fn.constructor.constructor('return typeof process')(),
        Object.getPrototypeOf(fn) === (fn === ctx.LimitExceeded ? Error : Function.prototype),
        Object.getOwnPropertyNames(fn).filter((k) => !['length', 'name', 'prototype', 'debug', 'info', 'warn', 'error'].includes(k)),
      ];
    }
    const pending = ctx.objects.list();
    out.promise = [pending instanceof Promise, pending.constructor.constructor('return typeof process')()];
    const answer = await ctx.objects.get('a');
    out.answer = [Object.getPrototypeOf(answer) === Object.prototype, answer.constructor.constructor('return typeof process')()];
    return out;
  }`;
  const host = fakeHost();
  host.objectsStore.set('a', { nested: { deep: true } });
  const result = output(await runCode(pool, request(code), host)) as Record<string, unknown>;
  for (const name of [
    'objects.get',
    'objects.put',
    'objects.list',
    'thread.post',
    'graph.mutate',
    'graph.query',
    'log',
    'log.info',
    'route',
    'LimitExceeded',
    'console.log',
    'getRandomValues',
  ]) {
    t.same(result[name], [true, 'undefined', true, []], `${name} is a plain function of the isolate`);
  }
  t.same(result.promise, [true, 'undefined'], 'a ctx call returns an isolate promise');
  t.same(result.answer, [true, 'undefined'], 'a host answer is an isolate object');
  await stillWorks(t, pool);
});

t.test('stack frames expose no function or receiver of the bootstrap', async (t) => {
  const code = `export default () => {
    const seen = [];
    Error.prepareStackTrace = (error, frames) => frames;
    const frames = new Error('probe').stack;
    for (const frame of frames) seen.push([typeof frame.getFunction(), typeof frame.getThis()]);
    return seen;
  }`;
  const result = output(await runCode(pool, request(code), fakeHost())) as unknown[];
  t.ok(Array.isArray(result) && result.length > 0, 'frames were read');
  t.same(
    result.filter((pair) => JSON.stringify(pair) !== '["undefined","undefined"]'),
    [],
    'strict frames hide functions and receivers',
  );
});

t.test('returned values cannot pollute host prototypes', async (t) => {
  const literal = await runCode(
    pool,
    request('export default () => ({ __proto__: { polluted: 1 }, own: 1 })'),
    fakeHost(),
  );
  t.same(output(literal), { own: 1 }, 'an inherited property is not data');
  const parsed = await runCode(
    pool,
    request(
      'export default () => JSON.parse(\'{"__proto__": {"polluted": 1}, "nested": {"__proto__": {"polluted": 2}}}\')',
    ),
    fakeHost(),
  );
  const value = output(parsed) as Record<string, unknown>;
  t.same(Object.keys(value), ['nested'], 'an own __proto__ key is dropped on the host');
  t.equal(Object.hasOwn(value.nested as object, '__proto__'), false, 'nested ones too');
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');
  t.equal(
    (Object.assign({}, value) as Record<string, unknown>).polluted,
    undefined,
    'merging the output pollutes nothing',
  );
  t.equal(Object.getPrototypeOf(value), Object.prototype, 'the output is a plain host object');
});

t.test('ctx call arguments cannot pollute host prototypes either', async (t) => {
  const host = fakeHost();
  await runCode(
    pool,
    request('export default (i, ctx) => ctx.objects.put("p", JSON.parse(\'{"__proto__": {"polluted": 1}, "ok": 1}\'))'),
    host,
  );
  t.same(host.objectsStore.get('p'), { ok: 1 });
  t.equal(({} as Record<string, unknown>).polluted, undefined);
});

t.test('getters, toJSON and Proxy traps run inside the isolate; the host gets data', async (t) => {
  const getter = output(
    await runCode(pool, request('export default () => ({ get x() { return 1 } })'), fakeHost()),
  ) as object;
  t.same(
    Object.getOwnPropertyDescriptor(getter, 'x'),
    { value: 1, writable: true, enumerable: true, configurable: true },
    'a getter arrives as a value',
  );
  t.same(
    output(await runCode(pool, request("export default () => ({ toJSON() { return 'replaced' } })"), fakeHost())),
    'replaced',
  );
  t.same(output(await runCode(pool, request('export default () => new Proxy({ a: 1 }, {})'), fakeHost())), { a: 1 });
  t.match(
    await runCode(
      pool,
      request("export default () => new Proxy({}, { ownKeys() { throw new Error('trap') } })"),
      fakeHost(),
    ),
    {
      kind: 'error',
      error: { code: 'output_invalid', message: /trap/ },
    },
  );
  t.match(
    await runCode(pool, request('export default () => ({ get x() { for (;;) {} } })', { timeoutMs: 300 }), fakeHost()),
    {
      kind: 'error',
      error: { code: 'code_timeout' },
    },
    'a getter that never returns is stopped at the deadline',
  );
  await stillWorks(t, pool);
});

t.test('globals and patched intrinsics do not leak into the next run', async (t) => {
  const created = pool.stats().created;
  // The realm is frozen, so each patch throws; it is attempted all the same.
  const first = `export default () => {
    const attempt = (patch) => { try { patch() } catch {} };
    attempt(() => { globalThis.leak = 'secret' });
    attempt(() => { Object.prototype.polluted = 1 });
    attempt(() => { Array.prototype.push = null });
    attempt(() => { JSON.stringify = () => '"hijacked"' });
    attempt(() => { JSON.parse = () => 'hijacked' });
    attempt(() => { Promise.prototype.then = null });
    return { wrote: true };
  }`;
  t.same(
    output(await runCode(pool, request(first), fakeHost())),
    { wrote: true },
    'the run is answered despite its patches',
  );
  const second = `export default () => ({
    leak: typeof globalThis.leak, polluted: ({}).polluted === undefined, push: typeof [].push,
    json: JSON.stringify({ a: 1 }), then: typeof Promise.prototype.then,
  })`;
  t.same(output(await runCode(pool, request(second), fakeHost())), {
    leak: 'undefined',
    polluted: true,
    push: 'function',
    json: '{"a":1}',
    then: 'function',
  });
  t.equal(pool.stats().created, created, 'both runs used the same isolate');
});

t.test('patched intrinsics do not change what the bridge does', async (t) => {
  const host = fakeHost();
  const code = `export default async (i, ctx) => {
    const attempt = (patch) => { try { patch() } catch {} };
    attempt(() => { JSON.stringify = () => '["objects.put", "forged"]' });
    attempt(() => Object.defineProperty(Object.prototype, 'reference', { get() { return true }, configurable: true }));
    attempt(() => { Array.prototype.push = function () { throw new Error('no push') } });
    const read = await ctx.objects.get('x');
    for (let n = 0; n < 5; n++) console.log('line', n);
    return { read, n: 1 };
  }`;
  host.objectsStore.set('x', 'value');
  const result = await runCode(pool, request(code), host);
  t.match(result, { kind: 'output', output: { read: 'value', n: 1 } });
  t.same(host.calls, ['objects.get x']);
  t.equal(host.logs.length, 5);
});

t.test('a synchronous endless loop is stopped at workflow.code_run_seconds', async (t) => {
  const result = await runCode(
    pool,
    request('export default () => { while (true) {} }', { timeoutMs: 300 }),
    fakeHost(),
  );
  t.same(result.kind === 'error' && result.error, {
    code: 'code_timeout',
    message: 'The code ran longer than workflow.code_run_seconds (0.3 s) and was stopped.',
    limit: { id: 'workflow.code_run_seconds', value: 0.3 },
  });
  await stillWorks(t, pool);
});

// The code must never run on the caller's thread (the runner's engine thread): a bomb that
// outruns the memory bound there takes the runner with it (docs/sandbox.md). A synchronous run
// would block this event loop for the whole loop, and the interval below could not fire.
t.test("code runs off the calling thread: the caller's event loop turns while the code loops", async (t) => {
  let turns = 0;
  const interval = setInterval(() => turns++, 5);
  try {
    const result = await runCode(
      pool,
      request('export default () => { while (true) {} }', { timeoutMs: 400 }),
      fakeHost(),
    );
    t.match(result, { kind: 'error', error: { code: 'code_timeout' } });
  } finally {
    clearInterval(interval);
  }
  t.ok(turns >= 5, `the caller's timers fired during the run (${turns} times)`);
  await stillWorks(t, pool);
});

t.test('an endless loop at module top level is stopped', async (t) => {
  t.match(await runCode(pool, request('for (;;) {} export default () => 1', { timeoutMs: 300 }), fakeHost()), {
    kind: 'error',
    error: { code: 'code_timeout' },
  });
  await stillWorks(t, pool);
});

t.test('awaiting a promise that never settles fails at once, not at the deadline', async (t) => {
  const never = /can never finish: it awaits a promise that nothing will settle/;
  // A 60 s deadline: a code_timeout here would mean the run held its isolate until then.
  const direct = await runCode(
    pool,
    request('export default async () => { await new Promise(() => {}) }', { timeoutMs: 60_000 }),
    fakeHost(),
  );
  t.match(direct, { kind: 'error', error: { code: 'code_error', message: never } });
  // Stuck only after host calls were answered: found when the last answer is delivered.
  const host = fakeHost();
  const after = await runCode(
    pool,
    request(
      'export default async (i, ctx) => { await ctx.objects.list(); await ctx.graph.query({}); await new Promise(() => {}) }',
      { timeoutMs: 60_000 },
    ),
    host,
  );
  t.match(after, { kind: 'error', error: { code: 'code_error', message: never } });
  t.same(host.calls, ['objects.list', 'graph.query']);
  // A never-settling promise beside a host call that does answer is found once that call is answered.
  const beside = await runCode(
    pool,
    request('export default (i, ctx) => { ctx.graph.query({}); return new Promise(() => {}) }', { timeoutMs: 60_000 }),
    fakeHost(),
  );
  t.match(beside, { kind: 'error', error: { code: 'code_error', message: never } });
  // Code that is still awaiting a slow host answer is not stuck.
  const slow = await runCode(
    pool,
    request('export default async (i, ctx) => (await ctx.graph.query(7)).nodes', { timeoutMs: 60_000 }),
    fakeHost(),
  );
  t.same(slow.kind === 'output' && slow.output, [7]);
  await stillWorks(t, pool);
});

t.test('a microtask storm is stopped', async (t) => {
  t.match(
    await runCode(pool, request('export default async () => { for (;;) await null }', { timeoutMs: 300 }), fakeHost()),
    { kind: 'error', error: { code: 'code_timeout' } },
  );
  await stillWorks(t, pool);
});

t.test('a loop after a host answer is stopped', async (t) => {
  const host = fakeHost();
  t.match(
    await runCode(
      pool,
      request('export default async (i, ctx) => { await ctx.objects.list(); for (;;) {} }', { timeoutMs: 300 }),
      host,
    ),
    { kind: 'error', error: { code: 'code_timeout' } },
  );
  t.same(host.calls, ['objects.list']);
  await stillWorks(t, pool);
});

t.test('code that keeps running after its result is stopped at the deadline', async (t) => {
  const code = `export default async (i, ctx) => {
    const answer = ctx.objects.get('x');
    answer.then(() => Promise.resolve().then(() => { for (;;) {} }));
    await answer;
    return 'returned';
  }`;
  t.match(await runCode(pool, request(code, { timeoutMs: 300 }), fakeHost()), {
    kind: 'error',
    error: { code: 'code_timeout' },
  });
  await stillWorks(t, pool);
});

t.test('a flood of unawaited ctx calls is bounded', async (t) => {
  const host = fakeHost();
  const result = await runCode(
    pool,
    request('export default (i, ctx) => { for (;;) ctx.objects.list() }', { timeoutMs: 1000 }),
    host,
  );
  t.match(result, { kind: 'error', error: { code: /^code_(timeout|memory)$/ } });
  t.ok(host.calls.length <= 16, `the host served at most maxCallsInFlight calls (${host.calls.length})`);
  await stillWorks(t, pool);
});

t.test('deep recursion is a code_error', async (t) => {
  t.match(await runCode(pool, request('export default function f() { return f() + 1 }'), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: 'RangeError: Maximum call stack size exceeded' },
  });
  await stillWorks(t, pool);
});

t.test('allocations past the memory bound are stopped', async (t) => {
  t.match(
    await runCode(pool, request('export default () => { const a = []; for (;;) a.push({ n: a.length }) }'), fakeHost()),
    {
      kind: 'error',
      error: {
        code: 'code_memory',
        message: 'The code used more than the sandbox memory bound (32 MiB) and was stopped.',
      },
    },
  );
  await stillWorks(t, pool);
  t.match(
    await runCode(pool, request('export default () => "x".repeat(2 ** 28)'), fakeHost()),
    { kind: 'error', error: { code: 'code_memory' } },
    'an output too large to serialize',
  );
  await stillWorks(t, pool);
  t.match(await runCode(pool, request('export default () => { let s = "x"; for (;;) s += s }'), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: 'RangeError: Invalid string length' },
  });
  t.match(await runCode(pool, request('export default () => new ArrayBuffer(2 ** 31).byteLength'), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: 'RangeError: Array buffer allocation failed' },
  });
  t.match(
    await runCode(
      pool,
      request('export default () => { const a = []; for (;;) a.push(new Uint8Array(1 << 20)) }'),
      fakeHost(),
    ),
    { kind: 'error', error: { code: 'code_error', message: /Array buffer allocation failed/ } },
  );
  await stillWorks(t, pool);
});

t.test('a huge log entry is cut before it reaches the host', async (t) => {
  const host = fakeHost();
  t.match(await runCode(pool, request('export default () => { console.log("x".repeat(2 ** 26)); return 1 }'), host), {
    kind: 'output',
    output: 1,
  });
  t.equal(host.logs.length, 1);
  t.ok(Buffer.byteLength(host.logs[0]?.message ?? '') <= 8 * 1024 + 3, 'cut to maxLogEntryBytes');
});

t.test('a stopped isolate is never handed out again', async (t) => {
  const before = pool.stats();
  await runCode(pool, request('export default () => { while (true) {} }', { timeoutMs: 200 }), fakeHost());
  const after = pool.stats();
  t.equal(after.retired, before.retired + 1, 'the stopped isolate was retired');
  await stillWorks(t, pool);
  t.equal(pool.stats().created, after.created + 1, 'the next run got a new isolate');
});

testDisposal(t, pool);
