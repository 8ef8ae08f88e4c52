/**
 * A context serves many runs, of every organization by default (docs/sandbox.md, "Context reuse").
 * Each test here has a first run try to leave something behind and a second run, of another
 * organization, on the same isolate and context, look for it. Reusing a context without the
 * lockdown and the per-run reset fails every one of them. With `contexts: 'tenant'` two
 * organizations never share a context (the last tests).
 */
import { lateObjectCount } from '../../sandbox/context-snapshot.ts';
import t, { type Test } from 'tap';
import { IsolatePool } from '../../sandbox/isolate-pool.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { CodeRequest, CodeResult } from '../../sandbox/messages.ts';
import { vettedSet } from '../../sandbox/modules.ts';
import { runCode } from '../../sandbox/sandbox.ts';
import { vettedModules } from '../../sandbox/vetted/index.ts';
import { fakeHost, request, testDisposal, testPool, type FakeHost } from './fake-host.ts';

const pools: IsolatePool[] = [];

function output(result: CodeResult): unknown {
  return result.kind === 'output' ? result.output : result;
}

/**
 * Runs `first` for one organization, then `second` for another (the tenant each request names is
 * replaced), and checks the second found the first's context.
 */
async function twoRuns(
  t: Test,
  pool: IsolatePool,
  first: CodeRequest,
  second: CodeRequest,
  hosts: [FakeHost, FakeHost] = [fakeHost(), fakeHost()],
): Promise<[CodeResult, CodeResult]> {
  const one = await runCode(pool, { ...first, tenant: 'org-first' }, hosts[0]);
  const reused = pool.stats().contextsReused;
  const two = await runCode(pool, { ...second, tenant: 'org-second' }, hosts[1]);
  t.equal(pool.stats().contextsReused, reused + 1, "the second run reused the first run's context");
  return [one, two];
}

const MARK = 'left by run 1';

/**
 * Places a run could write to, each `[label, write, read]`: `write` puts MARK there (or a
 * function returning it), `read` returns what is there. Run 1 tries every write; run 2 reads.
 */
const places: Array<[string, string, string]> = [
  ['globalThis property', 'globalThis.stash = MARK', 'globalThis.stash'],
  [
    'globalThis defineProperty',
    "Object.defineProperty(globalThis, 'stash2', { value: MARK, configurable: true })",
    'globalThis.stash2',
  ],
  ['global var by indirect eval', "(0, eval)('var stash3 = ' + JSON.stringify(MARK))", 'globalThis.stash3'],
  ['sloppy implicit global', "Function('m', 'stash4 = m')(MARK)", 'globalThis.stash4'],
  ['replaced global', 'globalThis.JSON = { stringify: () => MARK }', 'JSON.stringify(1)'],
  ['Object.prototype', 'Object.prototype.stash = MARK', '({}).stash'],
  ['Object.prototype.toString', 'Object.prototype.toString = () => MARK', 'String({})'],
  ['a tamed method', 'Object.prototype.toString.stash = MARK', 'Object.prototype.toString.stash'],
  ['a tamed Error method', 'Error.prototype.toString.stash = MARK', 'Error.prototype.toString.stash'],
  ['Array.prototype', 'Array.prototype.includes = () => MARK', '[].includes(1)'],
  ['Array.prototype element', 'Array.prototype[0] = MARK', '[,][0]'],
  ['Function.prototype', 'Function.prototype.call = () => MARK', '(() => 1).call()'],
  ['Promise', 'Promise.resolve = () => MARK', 'Promise.resolve(1)'],
  ['Promise.prototype', 'Promise.prototype.then = () => MARK', 'Promise.resolve(1).then()'],
  ['JSON', 'JSON.parse = () => MARK', "JSON.parse('1')"],
  ['Math', 'Math.max = () => MARK', 'Math.max(1, 2)'],
  ['Error', 'Error.stash = MARK', 'Error.stash'],
  ['Error.prototype', 'Error.prototype.name = MARK', "new Error('x').name"],
  ['Error.stackTraceLimit', 'Error.stackTraceLimit = 0', "new Error('x').stack.includes(' at ') ? 'frames' : MARK"],
  ['Error.prepareStackTrace', 'Error.prepareStackTrace = () => MARK', "new Error('x').stack"],
  ['iterator prototype', '[][Symbol.iterator]().__proto__.next = () => ({ done: false, value: MARK })', '[...[1]][0]'],
  ['%IteratorPrototype%', 'Object.getPrototypeOf([][Symbol.iterator]().__proto__).stash = MARK', '[].values().stash'],
  ['Iterator helpers', 'Iterator.prototype.map = () => MARK', '[1].values().map((x) => x)'],
  ['Map iterator prototype', 'new Map().entries().__proto__.next = () => MARK', 'new Map().entries().next()'],
  ['String iterator prototype', "''[Symbol.iterator]().__proto__.stash = MARK", "''[Symbol.iterator]().stash"],
  ['RegExp string iterator prototype', "'a'.matchAll(/a/g).__proto__.stash = MARK", "'a'.matchAll(/a/g).stash"],
  [
    'generator prototype',
    'Object.getPrototypeOf(function* () {}).prototype.next = () => MARK',
    '(function* () {})().next()',
  ],
  [
    'generator function',
    'Object.getPrototypeOf(function* () {}).stash = MARK',
    'Object.getPrototypeOf(function* () {}).stash',
  ],
  [
    'async function prototype',
    'Object.getPrototypeOf(async () => {}).stash = MARK',
    'Object.getPrototypeOf(async () => {}).stash',
  ],
  [
    'async iterator prototype',
    'Object.getPrototypeOf(Object.getPrototypeOf(async function* () {}).prototype).stash = MARK',
    '(async function* () {})().stash',
  ],
  ['%TypedArray%', 'Object.getPrototypeOf(Uint8Array).prototype.fill = () => MARK', 'new Uint8Array(1).fill(0)'],
  [
    '%ThrowTypeError%',
    "Object.getOwnPropertyDescriptor(Function.prototype, 'caller').get.stash = MARK",
    "Object.getOwnPropertyDescriptor(Function.prototype, 'caller').get.stash",
  ],
  [
    'Intl segments',
    "new Intl.Segmenter().segment('a').__proto__.stash = MARK",
    "new Intl.Segmenter().segment('a').stash",
  ],
  [
    'Intl segment iterator',
    "new Intl.Segmenter().segment('a')[Symbol.iterator]().__proto__.stash = MARK",
    "new Intl.Segmenter().segment('a')[Symbol.iterator]().stash",
  ],
  [
    'CallSite prototype',
    "Error.prepareStackTrace = (e, frames) => frames; const site = new Error('x').stack[0]; Error.prepareStackTrace = undefined; Object.getPrototypeOf(site).stash = MARK",
    "(() => { Error.prepareStackTrace = (e, frames) => frames; const site = new Error('x').stack[0]; Error.prepareStackTrace = undefined; return site.stash })()",
  ],
  [
    'error stack accessor',
    "Object.getOwnPropertyDescriptor(new Error('x'), 'stack').get.stash = MARK",
    "Object.getOwnPropertyDescriptor(new Error('x'), 'stack').get.stash",
  ],
  [
    'error stack setter',
    "Object.getOwnPropertyDescriptor(new Error('x'), 'stack').set.stash = MARK",
    "Object.getOwnPropertyDescriptor(new Error('x'), 'stack').set.stash",
  ],
  [
    'error stack setter prototype',
    "Object.setPrototypeOf(Object.getOwnPropertyDescriptor(new Error('x'), 'stack').set, { stash: MARK })",
    "Object.getOwnPropertyDescriptor(new Error('x'), 'stack').set.stash",
  ],
  ['RegExp statics', 'RegExp.input = MARK', 'RegExp.input'],
  ['console', 'console.log = () => {}; console.stash = MARK', 'console.stash'],
  ['console function prototype', 'console.log.prototype.stash = MARK', 'console.log.prototype.stash'],
  ['crypto', 'crypto.randomUUID = () => MARK', 'crypto.randomUUID()'],
  [
    'crypto function prototype',
    'crypto.getRandomValues.prototype.stash = MARK',
    'crypto.getRandomValues.prototype.stash',
  ],
  ['ctx.log', 'ctx.log.stash = MARK', 'ctx.log.stash'],
  ['ctx.log prototype', 'ctx.log.prototype.stash = MARK', 'ctx.log.prototype.stash'],
  ['ctx.LimitExceeded', 'ctx.LimitExceeded.stash = MARK', 'ctx.LimitExceeded.stash'],
  ['ctx.LimitExceeded.prototype', 'ctx.LimitExceeded.prototype.name = MARK', "new ctx.LimitExceeded('x', null).name"],
  ['prototype replaced', 'Object.setPrototypeOf(Array.prototype, { stash: MARK })', '[].stash'],
  ['property deleted', 'delete Array.prototype.map', "typeof [].map === 'function' ? 'map' : MARK"],
];

const pool = testPool(t, { size: 1 }, pools);

t.test('no global, intrinsic, console, crypto or ctx change reaches the next run', async (t) => {
  const first = `export default (input, ctx) => {
    const MARK = ${JSON.stringify(MARK)};
    const effective = [];
    ${places.map(([label, write, read]) => `try { ${write}; if ((${read}) === MARK) effective.push(${JSON.stringify(label)}); } catch {}`).join('\n    ')}
    return effective;
  }`;
  const second = `export default (input, ctx) => {
    const MARK = ${JSON.stringify(MARK)};
    const found = [];
    ${places.map(([label, , read]) => `try { if ((${read}) === MARK) found.push(${JSON.stringify(label)}); } catch (e) { found.push(${JSON.stringify(label)} + ' broke: ' + e.message); }`).join('\n    ')}
    return { found, frozen: Object.isFrozen(globalThis) };
  }`;
  const [one, two] = await twoRuns(t, pool, request(first), request(second));
  t.same(
    output(one),
    ['Error.prepareStackTrace'],
    'the first run could change nothing but its own Error.prepareStackTrace',
  );
  t.same(output(two), { found: [], frozen: true }, 'the second run found nothing of the first');
});

// These two fail against a context that keeps the code's (or a vetted) module instance between runs
// to save compiling it again.
t.test('a module-level `var`, `let` or counter starts afresh in every run', async (t) => {
  const code = 'var seen = 0; let count = 0; export default () => [++seen, ++count]';
  const [one, two] = await twoRuns(t, pool, request(code), request(code));
  t.same(
    [output(one), output(two)],
    [
      [1, 1],
      [1, 1],
    ],
  );
});

t.test('a vetted module is evaluated afresh in every run', async (t) => {
  const counter = {
    name: '@ws/counter',
    version: '1.0.0',
    description: 'A module with state, for this test.',
    source: 'let n = 0; export function next() { return ++n; }',
  };
  const counting = testPool(t, { size: 1, vetted: vettedSet([...vettedModules, counter]) }, pools);
  const code = request("import { next } from '@ws/counter'; export default () => [next(), next()]", {
    imports: ['@ws/counter'],
  });
  const [one, two] = await twoRuns(t, counting, code, code);
  t.same(
    [output(one), output(two)],
    [
      [1, 2],
      [1, 2],
    ],
  );
});

t.test('the last match of a run is not readable through RegExp statics in the next', async (t) => {
  const [one, two] = await twoRuns(
    t,
    pool,
    request(
      "export default () => { /secret-(\\w+)/.exec('secret-abc'); return [typeof RegExp.$1, typeof RegExp.lastMatch] }",
    ),
    request(
      "export default () => [RegExp.$1, RegExp.lastMatch, RegExp['$&'], RegExp.input, RegExp.leftContext, RegExp.rightContext, RegExp.lastParen].map((v) => typeof v)",
    ),
  );
  t.same(output(one), ['undefined', 'undefined'], 'the statics are gone');
  t.same(output(two), new Array(7).fill('undefined'));
});

t.test('Error.prepareStackTrace works for the run that set it and no other', async (t) => {
  const [one, two] = await twoRuns(
    t,
    pool,
    request(
      "export default () => { Error.prepareStackTrace = (e, frames) => 'formatted ' + frames.length; return new Error('x').stack.startsWith('formatted') }",
    ),
    request("export default () => [typeof Error.prepareStackTrace, new Error('x').stack.split('\\n')[0]]"),
  );
  t.same(output(one), true);
  t.same(output(two), ['undefined', 'Error: x']);
});

t.test('a resolver stashed by one run cannot be resumed by the next', async (t) => {
  // Run 1 hides its resolver (as MARK) in every place of the table and in
  // Error.prepareStackTrace; run 2 reads every place, calls any function it finds there and
  // formats a stack. Were one resumed, run 1's continuation would log into run 2.
  const first = `export default (input, ctx) => {
    let resolve;
    new Promise((r) => { resolve = r; }).then(() => console.log('resumed from run 1'));
    const MARK = () => resolve();
    ${places.map(([, write]) => `try { ${write}; } catch {}`).join('\n    ')}
    Error.prepareStackTrace = () => { resolve(); return 'x'; };
    return 'stashed';
  }`;
  const second = `export default async (input, ctx) => {
    const found = [];
    ${places.map(([label, , read]) => `try { const value = (${read}); if (typeof value === 'function') { found.push(${JSON.stringify(label)}); value(); } } catch {}`).join('\n    ')}
    new Error('trigger').stack;
    for (let i = 0; i < 5; i++) await null;
    console.log('run 2');
    return found;
  }`;
  const hosts: [FakeHost, FakeHost] = [fakeHost(), fakeHost()];
  const [one, two] = await twoRuns(t, pool, request(first), request(second), hosts);
  t.same(output(one), 'stashed');
  t.same(output(two), [], 'run 2 found no function of run 1');
  t.same(hosts[1].logs, [{ level: 'info', message: 'run 2' }], 'nothing of run 1 ran during run 2');
  t.same(hosts[0].logs, [], 'nor after run 1');
});

t.test('calls and continuations left by one run never reach the next', async (t) => {
  const narrow = testPool(t, { size: 1, bounds: { maxCallsInFlight: 2 } }, pools);
  const first = `export default (input, ctx) => {
    for (let i = 0; i < 6; i++) ctx.thread.post({ from: 'run 1', i }).then(() => console.log('continuation of run 1'));
    return 'left';
  }`;
  const second = `export default async (input, ctx) => {
    const a = await ctx.objects.get('a');
    const b = await ctx.objects.get('a');
    console.log('run 2');
    return [a, b];
  }`;
  const slow = fakeHost();
  const post = slow.thread.post;
  slow.thread.post = (item) => new Promise((resolve) => setTimeout(resolve, 20)).then(() => post(item));
  const next = fakeHost();
  next.objectsStore.set('a', 1);
  const [one, two] = await twoRuns(t, narrow, request(first), request(second), [slow, next]);
  t.same(output(one), 'left');
  t.same(output(two), [1, 1], 'the second run was served at once');
  t.same(next.calls, ['objects.get a', 'objects.get a'], 'only its own calls reached its host');
  t.same(next.logs, [{ level: 'info', message: 'run 2' }], 'no continuation of run 1 logged into run 2');
  t.equal(slow.threadItems.length, 2, 'run 1 had maxCallsInFlight calls with its host; its queued calls were dropped');
  t.same(slow.logs, [], 'answers after run 1 ended resumed nothing');
});

t.test("the code's microtasks never run on the host's thread, even those a thrown value's getters queue", async (t) => {
  // isolated-vm copies a failed task's thrown value out after the task's microtask checkpoint,
  // running its getters; a microtask they queue would run in the next synchronous call into the
  // isolate (the pool's heap check, reading the result, the next run's begin): on this thread,
  // without a deadline. Here that microtask spins forever: without the fix this file hangs (and tap
  // fails it at its timeout); with it, the isolate is disposed and the next run is served.
  const arm = `function arm() {
    const error = new Error('x');
    Object.defineProperty(error, 'message', { get() {
      Promise.resolve().then(() => { for (;;) {} });
      return 'armed';
    } });
    return error;
  }`;
  const cases: Record<string, string> = {
    'an unhandled rejection': `${arm} export default () => { Promise.reject(arm()); return 1; };`,
    'a top-level throw': `${arm} throw arm(); export default () => 1;`,
    'an unhandled rejection while an answer is delivered': `${arm} export default async (input, ctx) => {
      ctx.objects.get('a').catch(() => { Promise.reject(arm()); });
      await ctx.graph.query({});
      return 1;
    };`,
  };
  for (const [label, code] of Object.entries(cases)) {
    const fresh = testPool(t, { size: 1 }, pools);
    const host = fakeHost();
    host.objects.get = () => Promise.reject(new ServiceError('not_found', 'No such object.'));
    const result = await runCode(fresh, request(code, { tenant: 'org-first', timeoutMs: 1000 }), host);
    // The third may end with its output first: the refused call's answer can arrive either side of it.
    if (!label.includes('answer'))
      t.match(result, { kind: 'error', error: { code: 'code_error' } }, `${label}: the run failed as code_error`);
    t.match(
      await runCode(fresh, request('export default () => 2', { tenant: 'org-second' }), fakeHost()),
      { kind: 'output', output: 2 },
      `${label}: the next run is served`,
    );
  }
});

t.test('a ctx call that fails before the code awaits it fails the run as code_error, not code_timeout', async (t) => {
  const code = `export default async (input, ctx) => {
    const slow = ctx.graph.query({});
    const failing = ctx.objects.get('missing');
    try { await slow; await failing; } catch (e) { return 'caught ' + e.code; }
  }`;
  const host = fakeHost();
  host.objects.get = () => Promise.reject(new ServiceError('not_found', 'No such object.'));
  // The first call never answers, so the code is always still awaiting it when the refusal of the
  // second arrives: were it answered first, the code could catch the refusal (and may, on a busy host).
  host.graph.query = () => new Promise(() => {});
  const result = await runCode(testPool(t, { size: 1 }, pools), request(code, { timeoutMs: 30_000 }), host);
  // Node would report the same unhandled rejection; the run must not be blamed on its deadline.
  t.match(result, { kind: 'error', error: { code: 'code_error', message: /not_found|No such object|Uncaught/ } });
});

t.test('log counters and the random budget start afresh in every run', async (t) => {
  const counted = testPool(t, { size: 1, bounds: { maxLogEntries: 3, maxRandomBytes: 512 } }, pools);
  const code = `export default () => {
    for (let i = 0; i < 5; i++) console.log('line', i);
    let drawn = 0;
    try { for (;;) { crypto.getRandomValues(new Uint8Array(64)); drawn += 64; } } catch (e) { return [drawn, e.code]; }
  }`;
  const hosts: [FakeHost, FakeHost] = [fakeHost(), fakeHost()];
  const [one, two] = await twoRuns(t, counted, request(code), request(code), hosts);
  t.match(one, { kind: 'output', output: [512, 'call_refused'], stats: { logs: 3, logsDropped: 2 } });
  t.match(two, { kind: 'output', output: [512, 'call_refused'], stats: { logs: 3, logsDropped: 2 } });
  t.equal(hosts[1].logs.length, 3);
});

t.test('every object reachable from globalThis and the hidden intrinsics is frozen', async (t) => {
  const walk = `export default (input, ctx) => {
    // Instances the code makes are its own; their prototypes are the intrinsics to check.
    const instances = [function* () {}, async function () {}, async function* () {},
      [][Symbol.iterator](), new Map().entries(), new Set().values(), ''[Symbol.iterator](), 'a'.matchAll(/a/g),
      [1].values().map((x) => x), Iterator.from({ next() { return { done: true }; } }), new Uint8Array(1),
      new Intl.Segmenter().segment('a'), new Intl.Segmenter().segment('a')[Symbol.iterator]()];
    Error.prepareStackTrace = (e, frames) => frames;
    instances.push(new Error('x').stack[0]);
    Error.prepareStackTrace = undefined;
    const roots = [globalThis, ctx.LimitExceeded, ...instances.map((instance) => Object.getPrototypeOf(instance)),
      Object.getOwnPropertyDescriptor((function () { 'use strict'; return arguments; })(), 'callee').get,
      Object.getOwnPropertyDescriptor(new Error('x'), 'stack').get,
      Object.getOwnPropertyDescriptor(new Error('x'), 'stack').set];
    const seen = new Set();
    const open = [];
    const todo = [...roots];
    while (todo.length > 0) {
      const value = todo.pop();
      if (value === null || (typeof value !== 'object' && typeof value !== 'function') || seen.has(value)) continue;
      seen.add(value);
      if (!Object.isFrozen(value)) open.push(typeof value === 'function' ? 'function ' + value.name : Object.prototype.toString.call(value));
      todo.push(Object.getPrototypeOf(value));
      for (const key of Reflect.ownKeys(value)) {
        const desc = Object.getOwnPropertyDescriptor(value, key);
        todo.push(desc.value, desc.get, desc.set);
        // What an accessor gives its own holder: a tamed property's value is reached only so.
        // Getters meant for instances throw here; the run's own Error.prepareStackTrace is unset.
        if (desc.get !== undefined) {
          try {
            todo.push(desc.get.call(value));
          } catch {}
        }
      }
    }
    return { objects: seen.size > 500, open };
  }`;
  // Contexts come from the snapshot, where most of the realm was frozen once, and finish the
  // lockdown themselves (V8 extends a few intrinsics per context); without a snapshot a context
  // runs the whole of it. Two contexts each, on one isolate.
  for (const contextSnapshot of [true, false]) {
    const fresh = testPool(t, { size: 1, contextSnapshot }, pools);
    for (const tenant of ['first', 'second']) {
      t.same(
        output(await runCode(fresh, request(walk, { tenant }), fakeHost())),
        { objects: true, open: [] },
        `${tenant} context, snapshot ${contextSnapshot}`,
      );
    }
    t.equal(fresh.stats().created, 1, 'both on one isolate');
  }
  t.ok(lateObjectCount() > 0, 'the probe found the intrinsics V8 extends per context');
});

t.test('frozen intrinsics still let code shadow what it inherits', async (t) => {
  const code = `export default () => {
    class MyError extends Error { constructor(message) { super(message); this.name = 'MyError'; } }
    const counts = {};
    for (const word of 'constructor toString valueOf hasOwnProperty constructor'.split(' ')) counts[word] = Object.hasOwn(counts, word) ? counts[word] + 1 : 1;
    const error = new Error();
    error.message = 'changed';
    function Point() {}
    Point.prototype.toString = () => 'a point';
    let refused = null;
    try { Object.prototype.toString = () => 'hijacked'; } catch (e) { refused = e.name; }
    return [String(new MyError('m')), counts, error.message, String(new Point()), refused, String({})];
  }`;
  t.same(output(await runCode(pool, request(code), fakeHost())), [
    'MyError: m',
    { constructor: 2, toString: 1, valueOf: 1, hasOwnProperty: 1 },
    'changed',
    'a point',
    'TypeError',
    '[object Object]',
  ]);
});

t.test("the module that reaches the bootstrap is out of the code's reach", async (t) => {
  for (const specifier of ['sandbox:runtime', 'sandbox:code']) {
    const result = await runCode(
      pool,
      request(`import * as m from '${specifier}'; export default () => Object.keys(m)`, { imports: [specifier] }),
      fakeHost(),
    );
    t.match(result, { kind: 'error', error: { code: 'import_refused' } }, specifier);
  }
});

t.test("Math.random is each run's own generator, seeded from the run's random budget", async (t) => {
  // Fails against V8's Math.random, whose state belongs to the context (so to every run of it)
  // and draws nothing from the host.
  const budget = testPool(t, { size: 1, bounds: { maxRandomBytes: 256 } }, pools);
  const drained = `export default () => {
    crypto.getRandomValues(new Uint8Array(256));
    try { return Math.random(); } catch (e) { return e.code; }
  }`;
  t.match(await runCode(budget, request(drained), fakeHost()), { kind: 'output', output: 'call_refused' });
  const values = `export default () => {
    const v = [];
    for (let i = 0; i < 20000; i++) v.push(Math.random());
    const buckets = new Array(10).fill(0);
    for (const x of v) buckets[Math.floor(x * 10)]++;
    const own = Object.getOwnPropertyDescriptor(Math, 'random');
    return { first: v.slice(0, 4), inRange: v.every((x) => x >= 0 && x < 1), buckets, writable: own.writable,
      frozen: Object.isFrozen(Math.random), name: Math.random.name, length: Math.random.length,
      constructible: 'prototype' in Math.random };
  }`;
  const [one, two] = await twoRuns(t, pool, request(values), request(values));
  for (const result of [one, two]) {
    const got = output(result) as { buckets: number[] };
    t.match(got, { inRange: true, writable: false, frozen: true, name: 'random', length: 0, constructible: false });
    t.ok(
      got.buckets.every((count) => count > 1700 && count < 2300),
      `uniform over tenths: ${got.buckets.join(' ')}`,
    );
  }
  t.notSame(
    (output(one) as { first: number[] }).first,
    (output(two) as { first: number[] }).first,
    'each run starts from a seed of its own',
  );
});

t.test("with shared contexts, the runs of every organization use the isolate's one context", async (t) => {
  const shared = testPool(t, { size: 1 }, pools);
  for (const tenant of ['a', 'b', 'c', 'a'])
    t.match(await runCode(shared, request('export default () => 1', { tenant }), fakeHost()), {
      kind: 'output',
      output: 1,
    });
  t.match(shared.stats(), { created: 1, contextsCreated: 1, contextsReused: 3, contexts: 1 });
});

// Fails against an isolate that keeps one context for all the runs it serves.
t.test("with contexts: 'tenant', two tenants never share a context", async (t) => {
  const isolated = testPool(t, { size: 1, contexts: 'tenant' }, pools);
  const run = (tenant: string) => runCode(isolated, request('export default () => 1', { tenant }), fakeHost());
  for (const tenant of ['a', 'b', 'a', 'b', 'c']) t.match(await run(tenant), { kind: 'output', output: 1 });
  t.match(isolated.stats(), { created: 1, contextsReused: 2 }, 'only the second runs of a and b found a context');

  const one = testPool(t, { size: 1, contexts: 'tenant', maxContextsPerIsolate: 1 }, pools);
  for (const tenant of ['a', 'b', 'a'])
    t.match(await runCode(one, request('export default () => 1', { tenant }), fakeHost()), { kind: 'output' });
  t.match(one.stats(), { created: 1, contextsReused: 0 }, 'b took the only place, so a got a new context');

  const anonymous = testPool(t, { size: 1, contexts: 'tenant' }, pools);
  for (let i = 0; i < 2; i++)
    t.match(await runCode(anonymous, request('export default () => 1', { tenant: undefined }), fakeHost()), {
      kind: 'output',
    });
  t.match(anonymous.stats(), { contextsReused: 0 }, 'a run without a tenant shares its context with no other');
});

testDisposal(t, pools);
