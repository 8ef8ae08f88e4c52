import t from 'tap';
import { runCode } from '../../sandbox/sandbox.ts';
import { fakeHost, ids, request, testDisposal, testPool } from './fake-host.ts';

const pool = testPool(t, {
  bounds: {
    maxOutputBytes: 4096,
    maxLogEntries: 5,
    maxLogEntryBytes: 64,
    maxCallsInFlight: 2,
    maxCalls: 50,
    maxCallBytes: 2048,
    maxRandomBytes: 512,
  },
});

t.test('the default export receives the input and its return value is the output', async (t) => {
  const result = await runCode(
    pool,
    request('export default async (input, ctx) => ({ hello: input.name })', { input: { name: 'ada' } }),
    fakeHost(),
  );
  t.match(result, { kind: 'output', output: { hello: 'ada' } });
  t.type(result.stats.wallMs, 'number');
});

t.test('a synchronous default export works and undefined becomes null', async (t) => {
  t.match(await runCode(pool, request('export default (input) => input * 2', { input: 21 }), fakeHost()), {
    kind: 'output',
    output: 42,
  });
  t.match(await runCode(pool, request('export default () => {}'), fakeHost()), { kind: 'output', output: null });
});

t.test('ctx.ids carries the execution identifiers and ctx is frozen', async (t) => {
  const code = `export default (input, ctx) => {
    let frozen = false;
    try { ctx.objects = null; } catch { frozen = true; }
    return { ids: ctx.ids, frozen: frozen && Object.isFrozen(ctx) && Object.isFrozen(ctx.ids) };
  }`;
  t.match(await runCode(pool, request(code), fakeHost()), { kind: 'output', output: { ids, frozen: true } });
});

t.test('returning ctx.route(name, output) takes the named route', async (t) => {
  const result = await runCode(
    pool,
    request('export default (input, ctx) => ctx.route("retry", { attempt: input.attempt + 1 })', {
      input: { attempt: 1 },
    }),
    fakeHost(),
  );
  t.same(
    {
      kind: result.kind,
      route: result.kind === 'route' ? result.route : null,
      output: 'output' in result ? result.output : null,
    },
    { kind: 'route', route: 'retry', output: { attempt: 2 } },
  );
});

t.test('calling ctx.route without returning its result is output_invalid', async (t) => {
  const result = await runCode(
    pool,
    request('export default (input, ctx) => { ctx.route("retry", 1); return 2 }'),
    fakeHost(),
  );
  t.match(result, { kind: 'error', error: { code: 'output_invalid', message: /ctx\.route/ } });
});

t.test('a throw is code_error with the error name and message', async (t) => {
  t.match(await runCode(pool, request('export default () => { throw new TypeError("bad input") }'), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: 'TypeError: bad input' },
  });
  t.match(await runCode(pool, request('export default async () => { throw 42 }'), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: '42' },
  });
  t.match(
    await runCode(
      pool,
      request('export default () => { throw { get message() { throw new Error("no") } } }'),
      fakeHost(),
    ),
    { kind: 'error', error: { code: 'code_error' } },
  );
});

t.test('a top-level throw, a syntax error and a missing default export are code_error', async (t) => {
  t.match(await runCode(pool, request('throw new RangeError("at load"); export default () => 1'), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: 'RangeError: at load' },
  });
  t.match(await runCode(pool, request('export default ('), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: /^SyntaxError: .*logic\.code:1/ },
  });
  t.match(await runCode(pool, request('export const x = 1'), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: 'The module has no default export function.' },
  });
  t.match(await runCode(pool, request('export default 5'), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: 'The module has no default export function.' },
  });
});

t.test('a top-level await that never settles is reported, not awaited', async (t) => {
  const result = await runCode(pool, request('await new Promise(() => {}); export default () => 1'), fakeHost());
  t.match(result, { kind: 'error', error: { code: 'code_error', message: /top-level await/ } });
});

t.test('outputs that are not JSON data are output_invalid', async (t) => {
  for (const [code, message] of [
    ['export default () => 1n', /not JSON data/],
    ['export default () => () => 1', /not JSON data/],
    ['export default () => { const a = {}; a.self = a; return a }', /not JSON data/],
    ['export default () => "x".repeat(5000)', /larger than 4096 bytes/],
  ] as const) {
    t.match(
      await runCode(pool, request(code), fakeHost()),
      { kind: 'error', error: { code: 'output_invalid', message } },
      code,
    );
  }
});

t.test('the output bound counts UTF-8 bytes', async (t) => {
  // 1500 three-byte characters: 1502 UTF-16 units inside the isolate, 4502 bytes on the host.
  t.match(await runCode(pool, request('export default () => "€".repeat(1500)'), fakeHost()), {
    kind: 'error',
    error: { code: 'output_invalid', message: /4096 bytes/ },
  });
  t.match(await runCode(pool, request('export default () => "€".repeat(1300)'), fakeHost()), { kind: 'output' });
});

t.test('ctx.objects, ctx.thread and ctx.graph reach the host with copies of the data', async (t) => {
  const host = fakeHost();
  const code = `export default async (input, ctx) => {
    const value = { n: 1, list: [1, 2] };
    const written = await ctx.objects.put('a', value);
    value.n = 2;
    const read = await ctx.objects.get('a');
    const missing = await ctx.objects.get('nope');
    const listed = await ctx.objects.list();
    const posted = await ctx.thread.post({ text: 'hi' });
    const mutated = await ctx.graph.mutate([{ op: 'upsert_node', id: 'n1' }]);
    const queried = await ctx.graph.query({ start: { ids: ['n1'] } });
    return { written, read, missing, listed, posted, mutated, queried };
  }`;
  const result = await runCode(pool, request(code), host);
  t.match(result, {
    kind: 'output',
    output: {
      written: { alias: 'a', value: { n: 1 } },
      read: { n: 1, list: [1, 2] },
      missing: null,
      listed: ['a'],
      posted: { id: 1, text: 'hi' },
      mutated: { elements: [{ op: 'upsert_node' }] },
      queried: { nodes: [{ start: { ids: ['n1'] } }] },
    },
  });
  t.same(host.objectsStore.get('a'), { n: 1, list: [1, 2] }, 'the host kept the value as it was sent');
  t.equal(result.stats.hostCalls, 7);
});

t.test('a quota refusal raises LimitExceeded carrying the limit object', async (t) => {
  const host = fakeHost({ quota: 1 });
  const code = `export default async (input, ctx) => {
    await ctx.objects.put('first', 1);
    try { await ctx.objects.put('second', 2); return 'written'; }
    catch (e) { return { name: e.name, code: e.code, limit: e.limit, isLimit: e instanceof ctx.LimitExceeded, isError: e instanceof Error, message: e.message }; }
  }`;
  t.match(await runCode(pool, request(code), host), {
    kind: 'output',
    output: {
      name: 'LimitExceeded',
      code: 'limit_exceeded',
      limit: { id: 'workflow.session_objects_per_session', value: 1, held: 1 },
      isLimit: true,
      isError: true,
      message: 'The session holds as many objects as it may.',
    },
  });
  t.same([...host.objectsStore.keys()], ['first'], 'the refused write wrote nothing');
});

t.test('an uncaught LimitExceeded fails the node with limit_exceeded and the limit object', async (t) => {
  const result = await runCode(
    pool,
    request("export default async (i, ctx) => { await ctx.objects.put('a', 1); await ctx.objects.put('b', 2); }"),
    fakeHost({ quota: 1 }),
  );
  t.same(result.kind === 'error' && result.error, {
    code: 'limit_exceeded',
    message: 'The session holds as many objects as it may.',
    limit: { id: 'workflow.session_objects_per_session', value: 1, held: 1 },
  });
});

t.test('other host refusals keep their code and limit; host failures are hidden', async (t) => {
  const tooLarge = await runCode(
    pool,
    request("export default async (i, ctx) => ctx.objects.put('big', 'x'.repeat(1500))"),
    fakeHost(),
  );
  t.match(tooLarge, {
    kind: 'error',
    error: { code: 'session_object_too_large', limit: { id: 'workflow.session_object_bytes', value: 1000 } },
  });
  const host = fakeHost();
  const hidden = await runCode(
    pool,
    request(
      "export default async (i, ctx) => { try { await ctx.objects.put('explode', 1) } catch (e) { return [e.code, e.message] } }",
    ),
    host,
  );
  t.match(hidden, { kind: 'output', output: ['internal_error', 'The host call failed.'] });
  t.equal(host.reported.length, 1, 'the real error went to reportError');
});

t.test('an error the code makes up cannot claim a host code', async (t) => {
  const code =
    "export default () => { const e = new Error('fake'); e.code = 'limit_exceeded'; e.limit = { id: 'x', value: 1 }; throw e }";
  t.match(await runCode(pool, request(code), fakeHost()), {
    kind: 'error',
    error: { code: 'code_error', message: 'Error: fake' },
  });
});

t.test('ctx call arguments are checked before they reach the host', async (t) => {
  const host = fakeHost();
  const code = `export default async (i, ctx) => {
    const out = [];
    for (const call of [() => ctx.objects.get(5), () => ctx.objects.put('a', 1n), () => ctx.objects.put('a', 'x'.repeat(3000))]) {
      try { await call(); out.push('ok'); } catch (e) { out.push(e.code); }
    }
    return out;
  }`;
  t.match(await runCode(pool, request(code), host), {
    kind: 'output',
    output: ['invalid_request_body', 'invalid_request_body', 'payload_too_large'],
  });
  t.same(host.calls, [], 'no refused call reached the host');
});

t.test('concurrent ctx calls all complete while at most maxCallsInFlight wait on the host', async (t) => {
  const code = `export default async (i, ctx) => {
    const results = await Promise.all(Array.from({ length: 10 }, (_, n) => ctx.graph.query({ n })));
    return results.map((r) => r.nodes[0].n);
  }`;
  t.match(await runCode(pool, request(code), fakeHost()), { kind: 'output', output: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] });
});

t.test('a run makes at most maxCalls ctx calls', async (t) => {
  const code = `export default async (i, ctx) => {
    for (let n = 0; n < 60; n++) {
      try { await ctx.objects.list(); } catch (e) { return { n, code: e.code }; }
    }
    return 'all done';
  }`;
  t.match(await runCode(pool, request(code), fakeHost()), { kind: 'output', output: { n: 50, code: 'call_refused' } });
});

t.test('logs are bounded in count and size, from ctx.log and console alike', async (t) => {
  const host = fakeHost();
  const code = `export default (i, ctx) => {
    ctx.log('plain', { a: 1 });
    ctx.log.warn('warned');
    console.error(new TypeError('oops'));
    console.log('x'.repeat(1000));
    ctx.log.debug('€'.repeat(100));
    for (let n = 0; n < 100; n++) console.log('flood', n);
    return 'done';
  }`;
  const result = await runCode(pool, request(code), host);
  t.match(result, { kind: 'output', output: 'done', stats: { logs: 5, logsDropped: 100 } });
  t.same(host.logs.slice(0, 3), [
    { level: 'info', message: 'plain {"a":1}' },
    { level: 'warn', message: 'warned' },
    { level: 'error', message: 'TypeError: oops' },
  ]);
  t.equal(host.logs[3]?.message, `${'x'.repeat(64)}…`, 'a long entry is cut to maxLogEntryBytes');
  t.ok(Buffer.byteLength(host.logs[4]?.message ?? '') <= 64 + 3, 'the cut counts UTF-8 bytes');
  t.equal(host.logs.length, 5);
});

t.test('crypto.getRandomValues and randomUUID draw from the host within a budget', async (t) => {
  const code = `export default () => {
    const a = crypto.getRandomValues(new Uint8Array(16));
    const b = crypto.getRandomValues(new Uint32Array(4));
    const uuid = crypto.randomUUID();
    let refused = null;
    try { crypto.getRandomValues(new Uint8Array(1024)); } catch (e) { refused = e.code; }
    let floats = null;
    try { crypto.getRandomValues(new Float64Array(2)); } catch (e) { floats = e.name; }
    return { a: Array.from(a), b: Array.from(b), uuid, refused, floats };
  }`;
  const result = await runCode(pool, request(code), fakeHost());
  if (result.kind !== 'output') {
    t.fail(JSON.stringify(result));
    return;
  }
  const output = result.output as { a: number[]; uuid: string; refused: string; floats: string };
  t.equal(output.a.length, 16);
  t.notSame(output.a, new Array(16).fill(0), 'bytes were filled');
  t.match(output.uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(output.refused, 'call_refused', 'the budget of maxRandomBytes holds');
  t.equal(output.floats, 'TypeError');
});

t.test('Node and web APIs are absent; eval stays inside the isolate', async (t) => {
  const code = `export default () => ({
    process: typeof process, require: typeof require, module: typeof module, Buffer: typeof Buffer,
    setTimeout: typeof setTimeout, setInterval: typeof setInterval, queueMicrotask: typeof queueMicrotask, fetch: typeof fetch,
    WebAssembly: typeof WebAssembly, SharedArrayBuffer: typeof SharedArrayBuffer, Atomics: typeof Atomics,
    FinalizationRegistry: typeof FinalizationRegistry, WeakRef: typeof WeakRef,
    evalProcess: eval('typeof process'), fnProcess: Function('return typeof process')(),
    globalKeys: Object.getOwnPropertyNames(globalThis).filter((k) => /process|require|ivm|Reference|Callback|ExternalCopy/.test(k)),
  })`;
  t.match(await runCode(pool, request(code), fakeHost()), {
    kind: 'output',
    output: {
      process: 'undefined',
      require: 'undefined',
      module: 'undefined',
      Buffer: 'undefined',
      setTimeout: 'undefined',
      setInterval: 'undefined',
      queueMicrotask: 'undefined',
      fetch: 'undefined',
      WebAssembly: 'undefined',
      SharedArrayBuffer: 'undefined',
      Atomics: 'undefined',
      FinalizationRegistry: 'undefined',
      WeakRef: 'undefined',
      evalProcess: 'undefined',
      fnProcess: 'undefined',
      globalKeys: [],
    },
  });
});

testDisposal(t, pool);
