/**
 * The run caps (sandbox/run-caps-source.ts) in a real sandbox child: each allocator the isolate's
 * heap bound does not see (resizable buffers, Intl objects, Segmenter output, source handed to
 * eval / Function / RegExp, run-time property escapes) fails its own run with a `code_error` naming
 * the bound, the child is neither killed nor degraded, and the next run, another organization's,
 * gets its whole budget; no route around a guard (prototypes' constructors, Reflect.construct,
 * indirect eval, a RegExp or a look-alike as pattern, compile, a getter that changes its answer)
 * passes the bound, and no run can remove a guard.
 */
import t, { type Test } from 'tap';
import { ProcessSandbox } from '../../sandbox/sandbox-process.ts';
import { runCode } from '../../sandbox/sandbox.ts';
import type { CodeResult } from '../../sandbox/messages.ts';
import { fakeHost, request, testPool } from './fake-host.ts';

const MiB = 1024 * 1024;
const degraded: string[] = [];
const sandbox = new ProcessSandbox({
  // maxOutsideHeapBytes is the pool's memoryMb (32 MiB); the memory bound of the child (the
  // watchdog, 512 MiB) is what ends the bombs without the caps.
  pool: { size: 2, memoryMb: 32, bounds: { maxSourceChars: 64 * 1024 } },
  onDegraded: (reason) => degraded.push(reason),
  log: () => {},
});
t.teardown(() => sandbox.dispose());

function errorOf(result: CodeResult): { code: string; message: string } | null {
  return result.kind === 'error' ? { code: result.error.code, message: result.error.message } : null;
}

/** Runs `code` for organization A, then a trivial run for organization B, in the same child. */
async function capped(t: Test, code: string, bound: RegExp): Promise<void> {
  const pid = sandbox.stats().servingPid;
  const result = await sandbox.run(request(code, { tenant: 'org-a', timeoutMs: 20_000 }), fakeHost());
  t.match(errorOf(result), { code: 'code_error', message: bound }, 'the run fails, naming the bound');
  const next = await sandbox.run(request('export default () => "fine"', { tenant: 'org-b' }), fakeHost());
  t.match(next, { kind: 'output', output: 'fine' }, "another organization's next run is fine");
  t.equal(sandbox.stats().servingPid, pid, 'the same child serves it: none was killed');
  t.same(degraded, [], 'no child lost an isolate');
}

const OUTSIDE = /maxOutsideHeapBytes/;
const SOURCE = /maxSourceChars/;
const ESCAPES = /maxPropertyEscapes/;

t.before(async () => {
  await sandbox.warm();
});

t.test('resizable ArrayBuffers: maxByteLength counts against the run', async (t) => {
  await capped(
    t,
    `export default () => {
      const kept = [];
      for (let i = 0; i < 4096; i++) kept.push(new ArrayBuffer(${MiB}, { maxByteLength: ${MiB} }));
      return kept.length;
    }`,
    /a resizable ArrayBuffer .* 33554432 bytes of memory outside the JavaScript heap \(maxOutsideHeapBytes\)/,
  );
  await capped(t, `export default () => new ArrayBuffer(0, { maxByteLength: 2 ** 32 }).maxByteLength`, OUTSIDE);
  await capped(
    t,
    `export default () => Reflect.construct(new ArrayBuffer(1).constructor, [0, { maxByteLength: 2 ** 32 }], class {})`,
    OUTSIDE,
  );
  await capped(
    t,
    `class Big extends ArrayBuffer {}
    export default () => new Big(0, { maxByteLength: 2 ** 32 })`,
    OUTSIDE,
  );
});

t.test('Intl objects and Segmenter output count against the run', async (t) => {
  // Within the count caps, Intl objects and Segmenter copies still charge their bytes: after a
  // resizable buffer that leaves less than their size, the next one is refused by the byte budget.
  const nearlyFull = `new ArrayBuffer(0, { maxByteLength: ${32 * MiB - 40 * 1024} })`;
  await capped(
    t,
    `export default () => {
      const kept = [${nearlyFull}];
      for (let i = 0; i < 10; i++) kept.push(new Intl.DateTimeFormat('en'));
      return kept.length;
    }`,
    /an Intl\.DateTimeFormat .*maxOutsideHeapBytes/,
  );
  await capped(
    t,
    `export default () => {
      const kept = [${nearlyFull}];
      for (let i = 0; i < 100; i++) kept.push(Intl.NumberFormat('en'), new (Intl.Collator.prototype.constructor)('en'));
      return kept.length;
    }`,
    OUTSIDE,
  );
  await capped(
    t,
    `export default () => [${nearlyFull}, new Intl.Segmenter().segment('x'.repeat(100_000))]`,
    /Intl\.Segmenter\.prototype\.segment .*maxOutsideHeapBytes/,
  );
  await capped(
    t,
    `export default () => {
      const segments = new Intl.Segmenter().segment('x'.repeat(100_000));
      return [new ArrayBuffer(0, { maxByteLength: ${32 * MiB - 300 * 1024} }), segments[Symbol.iterator]()];
    }`,
    /an iterator of Intl\.Segmenter segments .*maxOutsideHeapBytes/,
  );
});

t.test('Intl objects and the characters Intl.Segmenter copies are counted per run: ICU time', async (t) => {
  // 200,000 kept formatters would be ≈ 5 GB; long before the bytes, the count stops them (each
  // costs ICU ≈ 0.15–0.3 ms to build, so a run stops after tens of milliseconds of that).
  await capped(
    t,
    `export default () => {
      const kept = [];
      for (let i = 0; i < 200000; i++) kept.push(new Intl.DateTimeFormat('en'));
      return kept.length;
    }`,
    /an Intl\.DateTimeFormat would take this run past its 256 Intl objects \(maxIntlObjects\)/,
  );
  // Any constructor, called or constructed, counts; even a cheap one.
  await capped(
    t,
    `export default () => {
      const kept = [];
      for (let i = 0; i < 200; i++) kept.push(Intl.NumberFormat('en'), new (Intl.Collator.prototype.constructor)('en'));
      return kept.length;
    }`,
    /maxIntlObjects/,
  );
  await capped(
    t,
    `export default () => {
      const text = 'x'.repeat(3_000_000);
      const segmenter = new Intl.Segmenter();
      const kept = [];
      for (let i = 0; i < 300; i++) kept.push(segmenter.segment(text));
      return kept.length;
    }`,
    /Intl\.Segmenter\.prototype\.segment would take this run past its 2097152 characters segmented by Intl\.Segmenter \(maxSegmentedChars\)/,
  );
  await capped(
    t,
    `export default () => {
      const segments = new Intl.Segmenter().segment('x'.repeat(1_000_000));
      const kept = [];
      for (let i = 0; i < 300; i++) kept.push(segments[Symbol.iterator]());
      return kept.length;
    }`,
    /an iterator of Intl\.Segmenter segments .*maxSegmentedChars/,
  );
  // What ordinary code does stays well within both: a formatter per locale and style, a text
  // segmented and walked.
  const within = await sandbox.run(
    request(
      `export default () => {
        const formats = [];
        for (let i = 0; i < 250; i++) formats.push(new Intl.NumberFormat('en', { minimumFractionDigits: i % 20 }));
        const words = [...new Intl.Segmenter('en', { granularity: 'word' }).segment('lorem ipsum dolor '.repeat(5_000))];
        const segments = new Intl.Segmenter().segment('y'.repeat(900_000));
        return [formats.length, words.length, segments.containing(899_999).index];
      }`,
      { tenant: 'org-b' },
    ),
    fakeHost(),
  );
  t.match(within, { kind: 'output', output: [250, 30_000, 899_999] }, 'within both counts');
});

t.test('source handed to eval and the Function constructors is bounded per run, by every route', async (t) => {
  const big = `'1 + ' + '1 + '.repeat(20000) + '1'`;
  for (const route of [
    `eval(${big})`,
    `globalThis.eval(${big})`,
    `(0, eval)(${big})`,
    `new Function('return ' + ${big})`,
    `Function('return ' + ${big})`,
    `Reflect.construct(Function, ['return ' + ${big}])`,
    `(() => {}).constructor('return ' + ${big})`,
    `Function.prototype.constructor('return ' + ${big})`,
    `Object.getPrototypeOf(async function () {}).constructor('return ' + ${big})`,
    `Object.getPrototypeOf(function* () {}).constructor('yield ' + ${big})`,
    `Object.getPrototypeOf(async function* () {}).constructor('yield ' + ${big})`,
    `new Function(${big}.slice(0, 40000), ${big}.slice(0, 40000))`,
  ]) {
    await capped(t, `export default () => ${route}`, SOURCE);
  }
  // Two sources within the bound alone are past it together.
  await capped(
    t,
    `export default () => [eval(${big}.slice(0, 40000) + '1'), eval(${big}.slice(0, 40000) + '1')]`,
    SOURCE,
  );
});

t.test('a RegExp source is bounded by every route; copying a RegExp is not charged again', async (t) => {
  const big = `'a'.repeat(70000)`;
  for (const route of [
    `new RegExp(${big})`,
    `RegExp(${big})`,
    `new (/x/.constructor)(${big})`,
    `Reflect.construct(RegExp, [${big}], Array)`,
    `new (class extends RegExp {})(${big})`,
    `new RegExp({ [Symbol.match]: true, source: ${big}, flags: '' })`,
    `/x/.compile(${big})`,
    `(() => { let n = 0; return new RegExp({ toString: () => (n++ === 0 ? 'a' : 'x') + ${big} }); })()`,
  ]) {
    await capped(t, `export default () => ${route}`, SOURCE);
  }
  const result = await sandbox.run(
    request(
      `export default () => {
        const re = /\\p{L}+/u;
        let copies = 0;
        for (let i = 0; i < 1000; i++) copies += new RegExp(re).test('abc') ? 1 : 0;
        return [copies, 'a, b,c'.split(/,\\s*/), [...'a1b2'.matchAll(/\\d/g)].length, RegExp(re) === re, new RegExp(re, 'g').flags];
      }`,
      { tenant: 'org-a' },
    ),
    fakeHost(),
  );
  t.match(result, { kind: 'output', output: [1000, ['a', 'b', 'c'], 2, true, 'g'] }, 'RegExps work as before');
});

t.test('run-time Unicode property escapes are budgeted per run as the definition check counts them', async (t) => {
  const escapes = (n: number) => `'\\\\p{RGI_Emoji}'.repeat(${n})`;
  await capped(t, `export default () => new RegExp(${escapes(65)}, 'v')`, ESCAPES);
  await capped(t, `export default () => [new RegExp(${escapes(40)}, 'v'), new RegExp(${escapes(40)}, 'v')]`, ESCAPES);
  await capped(t, `export default () => eval('/' + ${escapes(65)} + '/v')`, ESCAPES);
  await capped(t, `export default () => new Function('return /' + ${escapes(65)} + '/v')`, ESCAPES);
  // A bomb of thousands, as built at run time.
  await capped(t, `export default () => new RegExp(${escapes(4000)}, 'v')`, /RegExp would take this run past/);
  const within = await sandbox.run(
    request(`export default () => new RegExp(${escapes(64)}, 'v').flags`, { tenant: 'org-b' }),
    fakeHost(),
  );
  t.match(within, { kind: 'output', output: 'v' }, '64 escapes in a run are within the budget');
});

t.test('each run gets the whole budget, whatever the run before it spent', async (t) => {
  const spend = `export default () => [new ArrayBuffer(0, { maxByteLength: 30 * ${MiB} }).maxByteLength, eval('1 + '.repeat(15000) + '1')]`;
  for (const tenant of ['org-a', 'org-b', 'org-a']) {
    t.match(await sandbox.run(request(spend, { tenant }), fakeHost()), { kind: 'output', output: [30 * MiB, 15001] });
  }
});

t.test('a getter or toString is read once, so V8 gets the value the guard checked', async (t) => {
  const result = await sandbox.run(
    request(
      `export default () => {
        let reads = 0;
        const buffer = new ArrayBuffer(1, { get maxByteLength() { return reads++ === 0 ? 16 : 2 ** 32 } });
        let calls = 0;
        const fn = new Function({ toString: () => (calls++ === 0 ? 'return 7' : 'return ' + '1+'.repeat(50000) + '1') });
        let texts = 0;
        const re = new RegExp({ toString: () => (texts++ === 0 ? 'a' : 'a'.repeat(70000)) });
        return [buffer.maxByteLength, reads, fn(), calls, re.source, texts];
      }`,
      { tenant: 'org-a' },
    ),
    fakeHost(),
  );
  t.match(result, { kind: 'output', output: [16, 1, 7, 1, 'a', 1] });
});

t.test('no run can remove or replace a guard, and the guarded intrinsics behave as before', async (t) => {
  const result = await sandbox.run(
    request(
      `export default () => {
        const attempts = {
          global: () => { globalThis.RegExp = function () {}; },
          deleteGlobal: () => { delete globalThis.ArrayBuffer; },
          intl: () => { Intl.DateTimeFormat = function () {}; },
          protoConstructor: () => { RegExp.prototype.constructor = function () {}; },
          asyncConstructor: () => { Object.getPrototypeOf(async function () {}).constructor = function () {}; },
          functionConstructor: () => { Object.defineProperty(Function.prototype, 'constructor', { value: function () {} }); },
          segment: () => { Intl.Segmenter.prototype.segment = function () {}; },
          compile: () => { delete RegExp.prototype.compile; },
          eval: () => { Object.defineProperty(globalThis, 'eval', { value: (x) => x }); },
        };
        const refused = [];
        for (const [name, attempt] of Object.entries(attempts)) {
          try { attempt(); } catch (error) { if (error instanceof TypeError) refused.push(name); }
        }
        return {
          refused,
          frozen: [ArrayBuffer, RegExp, Function, Intl.DateTimeFormat, Intl.Segmenter.prototype].every(Object.isFrozen),
          shapes: [
            new ArrayBuffer(8).constructor === ArrayBuffer,
            new Uint8Array(4).buffer instanceof ArrayBuffer,
            ArrayBuffer.isView(new Uint8Array(1)),
            new ArrayBuffer(2, { maxByteLength: 8 }).resizable,
            (() => { try { ArrayBuffer(1); return false } catch (error) { return error instanceof TypeError } })(),
            new Intl.NumberFormat('en').format(1234.5),
            Intl.DateTimeFormat('en', { timeZone: 'UTC' }).format(0),
            new Intl.DateTimeFormat('en') instanceof Intl.DateTimeFormat,
            [...new Intl.Segmenter('en', { granularity: 'word' }).segment('hi there')].length,
            typeof Intl.v8BreakIterator,
            typeof SharedArrayBuffer,
            typeof RegExp.escape,
            RegExp.name + ArrayBuffer.name + Function.name + Intl.Collator.name,
            new Function('a', 'b', 'return a + b')(1, 2),
            eval('typeof globalThis'),
          ],
        };
      }`,
      { tenant: 'org-a' },
    ),
    fakeHost(),
  );
  t.match(result, {
    kind: 'output',
    output: {
      refused: [
        'global',
        'deleteGlobal',
        'intl',
        'protoConstructor',
        'asyncConstructor',
        'functionConstructor',
        'segment',
        'compile',
        'eval',
      ],
      frozen: true,
      shapes: [
        true,
        true,
        true,
        true,
        true,
        '1,234.5',
        '1/1/1970',
        true,
        3,
        'undefined',
        'undefined',
        'function',
        'RegExpArrayBufferFunctionCollator',
        3,
        'object',
      ],
    },
  });
});

t.test('memory a run keeps outside the heap past its end retires its isolate', async (t) => {
  // A private field stamped on a frozen shared object keeps a value alive after the run; no later
  // run can read it, but its memory stays until the isolate goes.
  const pool = testPool(t, { size: 1, memoryMb: 32 });
  const stamp = `class Base { constructor(o) { return o; } }
    class Keep extends Base { #kept; constructor(o, v) { super(o); this.#kept = v; } }
    export default () => {
      const kept = new ArrayBuffer(20 * ${MiB}, { maxByteLength: 20 * ${MiB} });
      new Uint8Array(kept).fill(1);
      new Keep(Object.prototype, kept);
      return 1;
    }`;
  for (let i = 0; i < 3; i++) t.match(await runCode(pool, request(stamp), fakeHost()), { kind: 'output', output: 1 });
  // 20 MiB charged is past the isolate's maxHeapBytes (16 MiB): each run's isolate is retired.
  t.equal(pool.stats().recycled, 3, 'each isolate that kept 20 MiB outside its heap was retired');
  t.match(await runCode(pool, request('export default () => 2'), fakeHost()), { kind: 'output', output: 2 });
  t.equal(pool.stats().recycled, 3, 'a run that charged nothing retires nothing');
});
