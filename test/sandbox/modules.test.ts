import ivm from 'isolated-vm';
import t from 'tap';
import { checkImport, vettedSet } from '../../sandbox/modules.ts';
import { runCode } from '../../sandbox/sandbox.ts';
import { vettedModules } from '../../sandbox/vetted/index.ts';
import { fakeHost, request, testDisposal, testPool } from './fake-host.ts';

const pool = testPool(t);
const granted = ['@ws/uuid', '@ws/math'];

t.test('a granted vetted import works', async (t) => {
  const code = `import { v4, validate, version } from '@ws/uuid';
    import uuid from '@ws/uuid';
    import { mean, median, percentile, round, clamp, sum, stddev, min, max } from '@ws/math';
    export default () => {
      const id = v4();
      return {
        id, valid: validate(id), version: version(id), same: uuid.v4 === v4, distinct: v4() !== v4(),
        mean: mean([1, 2, 3, 4]), median: median([5, 1, 3]), p90: percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90),
        round: round(1.005, 2), negative: round(-1.005, 2), clamp: clamp(15, 0, 10), sum: sum([]), stddev: stddev([2, 4, 4, 4, 5, 5, 7, 9]),
        min: min([3, -1, 2]), max: max([3, -1, 2]),
      };
    }`;
  const result = await runCode(pool, request(code, { imports: granted }), fakeHost());
  t.match(result, {
    kind: 'output',
    output: {
      id: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      valid: true,
      version: 4,
      same: true,
      distinct: true,
      mean: 2.5,
      median: 3,
      p90: 9.1,
      round: 1.01,
      negative: -1.01,
      clamp: 10,
      sum: 0,
      stddev: 2,
      min: -1,
      max: 3,
    },
  });
});

t.test('vetted modules check their arguments', async (t) => {
  const code = `import { mean } from '@ws/math';
    import { parse } from '@ws/uuid';
    export default () => {
      const out = [];
      for (const f of [() => mean([]), () => mean(['1']), () => parse('nope')]) {
        try { f(); out.push('ok'); } catch (e) { out.push(e.name); }
      }
      return out;
    }`;
  t.match(await runCode(pool, request(code, { imports: granted }), fakeHost()), {
    kind: 'output',
    output: ['RangeError', 'TypeError', 'TypeError'],
  });
});

t.test('a vetted module that is not granted is refused', async (t) => {
  const result = await runCode(
    pool,
    request("import { v4 } from '@ws/uuid'; export default () => v4()", { imports: ['@ws/math'] }),
    fakeHost(),
  );
  t.same(result.kind === 'error' && result.error, {
    code: 'import_refused',
    message: '"@ws/uuid" is not granted by workflow.code_imports.',
  });
});

t.test('everything but vetted names is refused, granted or not', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['fs', /"fs" is a Node built-in/],
    ['node:fs', /"node:fs" is a Node built-in/],
    ['fs/promises', /Node built-in/],
    ['child_process', /Node built-in/],
    ['./x.js', /"\.\/x\.js" is a path/],
    ['../secret', /is a path/],
    ['/etc/passwd', /is a path/],
    ['data:text/javascript,export default 1', /is a URL/],
    ['http://example.com/x.js', /is a URL/],
    ['file:///etc/passwd', /is a URL/],
    ['lodash', /"lodash" is not a module the sandbox provides/],
  ];
  for (const [specifier, message] of cases) {
    const code = `import x from ${JSON.stringify(specifier)}; export default () => x`;
    t.match(
      await runCode(pool, request(code, { imports: [...granted, specifier] }), fakeHost()),
      { kind: 'error', error: { code: 'import_refused', message } },
      specifier,
    );
  }
});

t.test('re-exports and side-effect imports are checked too', async (t) => {
  t.match(await runCode(pool, request("import 'node:fs'; export default () => 1"), fakeHost()), {
    kind: 'error',
    error: { code: 'import_refused' },
  });
  t.match(await runCode(pool, request("export * from 'node:fs'; export default () => 1"), fakeHost()), {
    kind: 'error',
    error: { code: 'import_refused' },
  });
});

t.test('dynamic import() is refused inside the isolate', async (t) => {
  const code = `export default async () => {
    const out = [];
    for (const specifier of ['node:fs', '@ws/uuid', 'data:text/javascript,export default 1', 'http://example.com/x.js']) {
      try { await import(specifier); out.push('loaded'); } catch (e) { out.push(e.message); }
    }
    return out;
  }`;
  t.match(await runCode(pool, request(code, { imports: granted }), fakeHost()), {
    kind: 'output',
    output: ['Not supported', 'Not supported', 'Not supported', 'Not supported'],
  });
  t.match(
    await runCode(
      pool,
      request("export default async () => (await import('node:fs')).readFileSync('/etc/passwd')"),
      fakeHost(),
    ),
    { kind: 'error', error: { code: 'code_error', message: 'Error: Not supported' } },
  );
});

t.test('checkImport explains each refusal', async (t) => {
  const vetted = vettedSet();
  t.match(checkImport('@ws/math', ['@ws/math'], vetted), { ok: true, module: { name: '@ws/math' } });
  t.match(checkImport('@ws/math', [], vetted), { ok: false, message: /not granted/ });
  t.match(checkImport('@ws/other', ['@ws/other'], vetted), { ok: false, message: /not a module the sandbox provides/ });
});

t.test('every vetted module compiles without imports of its own', async (t) => {
  const isolate = new ivm.Isolate({ memoryLimit: 16 });
  t.teardown(() => isolate.dispose());
  t.ok(vettedModules.length >= 2);
  for (const module of vettedModules) {
    const compiled = isolate.compileModuleSync(module.source, { filename: module.name });
    t.same(compiled.dependencySpecifiers, [], `${module.name} imports nothing`);
    compiled.release();
  }
});

testDisposal(t, pool);
