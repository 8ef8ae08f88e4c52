/**
 * The JavaScript that caps, per run, what code can make outside the isolate's heap bound (which
 * isolated-vm's `memoryLimit` does not see), so that such code fails its own run with an error
 * naming the bound instead of growing the sandbox process until its memory bound kills it (and
 * every other run in it with it: docs/sandbox.md, "Memory"):
 *
 * - resizable `ArrayBuffer`s: V8 reserves `maxByteLength` outside isolated-vm's bounded allocator;
 *   the whole of it is charged to the run's `maxOutsideHeapBytes`;
 * - `Intl` objects (ICU memory: ≈ 29 KB per `DateTimeFormat`, a few KB for the others), each
 *   charged at a measured estimate, and `Intl.Segmenter` output (`segment()` and each iterator of
 *   its result hold a UTF-16 copy of the string: 2 bytes per character), to the same budget;
 *   `Intl.v8BreakIterator` (non-standard, and it copies its text too) is deleted. They are also
 *   counted, `maxIntlObjects` objects and `maxSegmentedChars` characters per run: ICU takes CPU time
 *   to build each (≈ 0.15–0.3 ms a `DateTimeFormat`, ≈ 10–20 ns a character copied), and within
 *   the byte budget alone a run spent up to a second of it before its cap, on the CPU the other
 *   organizations' runs share;
 * - the source text handed to `eval`, `Function`, the async / generator function constructors
 *   and `RegExp` (and `RegExp.prototype.compile`): at most `maxSourceChars` characters per run
 *   (the compiler's memory grows with it), holding at most `maxPropertyEscapes` Unicode property
 *   escapes per run (V8's zone memory while it parses a pattern), counted as the definition check
 *   counts them (shared/workflow/property-escapes.ts: its source is embedded here).
 *
 * The source is the function `runCaps(charge, propertyEscapes)`, called by the bootstrap
 * (sandbox/isolate-source.ts) before the lockdown, so every guard is frozen with the realm and no
 * run can remove it. `charge.bytes(n, what)`, `charge.intl(n, what)` (an object, and its bytes),
 * `charge.segmented(chars, what)` (characters, and their bytes) and `charge.source(text, what)`
 * charge the run in force (its record is replaced by `begin`, so every run starts with its whole
 * budget) and throw a `RangeError` naming the bound when the run would pass it. Each guard
 * replaces an intrinsic constructor everywhere it is reachable (the global or `Intl` property and
 * its prototype's `constructor`; the async and generator function constructors are reachable only
 * there), takes the original's static properties and prototype, and hands the original only
 * primitives it converted itself, so a `toString` or getter cannot show the check one value and
 * V8 another.
 *
 * It returns `[guards, adopt]`: V8 adds properties to a few intrinsics each time it makes a
 * context from the snapshot (`RegExp.escape` on Node 24), on the original, so the guards are left
 * to the lockdown's second phase, which first calls `adopt()` to copy what an original gained onto
 * its guard.
 *
 * `eval` stays callable, but only as an indirect eval: a direct eval is one whose callee is the
 * intrinsic itself, and the guard is not, so `eval(source)` runs in the global scope.
 */
export const RUN_CAPS_SOURCE = String.raw`function runCaps(charge, propertyEscapes) {
  'use strict';
  const G = globalThis;
  const apply = Reflect.apply;
  const construct = Reflect.construct;
  const defineProperty = Object.defineProperty;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const getPrototypeOf = Object.getPrototypeOf;
  const ownKeys = Reflect.ownKeys;
  const trunc = Math.trunc;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const WeakMapCtor = WeakMap;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const SetCtor = Set;
  const setHas = Set.prototype.has;
  const originals = [];
  const guards = [];
  // The originals' own keys when they were replaced.
  const known = [];

  // A guard in place of a constructor: same name, length, statics and prototype, and the
  // prototype's constructor points back at the guard (else new (x.constructor)(…) reaches the original).
  function replace(home, key, original, guard) {
    defineProperty(guard, 'name', { value: original.name, configurable: true });
    defineProperty(guard, 'length', { value: original.length, configurable: true });
    const keys = ownKeys(original);
    for (let i = 0; i < keys.length; i++) {
      const own = keys[i];
      if (own === 'length' || own === 'name' || own === 'prototype') continue;
      defineProperty(guard, own, getOwnPropertyDescriptor(original, own));
    }
    defineProperty(guard, 'prototype', { value: original.prototype, writable: false, enumerable: false, configurable: false });
    defineProperty(original.prototype, 'constructor', { value: guard, writable: true, enumerable: false, configurable: true });
    if (home !== null) defineProperty(home, key, { value: guard, writable: true, enumerable: false, configurable: true });
    originals[originals.length] = original;
    guards[guards.length] = guard;
    known[known.length] = new SetCtor(keys);
  }
  function listOf(args) {
    const list = [];
    for (let i = 0; i < args.length; i++) list[i] = args[i];
    return list;
  }
  // ToString, once: a template literal throws for a Symbol as the built-ins do.
  function text(value) {
    return ${'`'}${'${'}value}${'`'};
  }

  // Resizable buffers. ToIndex as the constructor does, once, then the original gets numbers.
  function toIndex(value, message) {
    let n = +value;
    n = n !== n ? 0 : trunc(n);
    if (n < 0 || n > 9007199254740991) throw new RangeErrorCtor(message);
    return n;
  }
  const ArrayBufferOriginal = G.ArrayBuffer;
  replace(G, 'ArrayBuffer', ArrayBufferOriginal, function (length, options) {
    if (new.target === undefined) throw new TypeErrorCtor("Constructor ArrayBuffer requires 'new'");
    const byteLength = toIndex(length, 'Invalid array buffer length');
    if (options === null || (typeof options !== 'object' && typeof options !== 'function')) {
      return construct(ArrayBufferOriginal, [byteLength], new.target);
    }
    const requested = options.maxByteLength;
    if (requested === undefined) return construct(ArrayBufferOriginal, [byteLength], new.target);
    const maxByteLength = toIndex(requested, 'Invalid array buffer max length');
    charge.bytes(maxByteLength, 'a resizable ArrayBuffer (its maxByteLength)');
    return construct(ArrayBufferOriginal, [byteLength, { maxByteLength }], new.target);
  });

  // Intl: each object holds ICU memory outside the heap (measured per object, rounded up).
  if (typeof G.Intl === 'object') {
    const Intl = G.Intl;
    delete Intl.v8BreakIterator;
    if (typeof Intl.Segmenter === 'function') {
      // segment() copies the string (UTF-16), and so does each iterator of its result.
      const segmenterProto = Intl.Segmenter.prototype;
      const segment = segmenterProto.segment;
      const segments = getPrototypeOf(apply(segment, new Intl.Segmenter(), ['a']));
      const iterate = segments[Symbol.iterator];
      const lengths = new WeakMapCtor();
      const methods = {
        segment(string) {
          const value = text(string);
          charge.segmented(value.length, 'Intl.Segmenter.prototype.segment');
          const result = apply(segment, this, [value]);
          apply(weakSet, lengths, [result, value.length]);
          return result;
        },
        [Symbol.iterator]() {
          const length = apply(weakGet, lengths, [this]);
          charge.segmented(length === undefined ? 0 : length, 'an iterator of Intl.Segmenter segments');
          return apply(iterate, this, []);
        },
      };
      defineProperty(segmenterProto, 'segment', { value: methods.segment, writable: true, enumerable: false, configurable: true });
      defineProperty(segments, Symbol.iterator, { value: methods[Symbol.iterator], writable: true, enumerable: false, configurable: true });
    }
    const sizes = [['DateTimeFormat', 32768], ['RelativeTimeFormat', 8192], ['Segmenter', 8192], ['Collator', 4096],
      ['NumberFormat', 4096], ['PluralRules', 4096], ['ListFormat', 4096], ['DisplayNames', 4096], ['DurationFormat', 4096], ['Locale', 4096]];
    for (let i = 0; i < sizes.length; i++) {
      const name = sizes[i][0];
      const bytes = sizes[i][1];
      const original = Intl[name];
      if (typeof original !== 'function') continue;
      const what = 'an Intl.' + name;
      replace(Intl, name, original, function () {
        charge.intl(bytes, what);
        return new.target === undefined ? apply(original, this, listOf(arguments)) : construct(original, listOf(arguments), new.target);
      });
    }
  }

  // Source handed to the compiler: eval, the function constructors, RegExp.
  const evalOriginal = G.eval;
  const guardedEval = {
    eval(source) {
      if (typeof source !== 'string') return source;
      charge.source(source, 'eval');
      return evalOriginal(source);
    },
  }.eval;
  defineProperty(G, 'eval', { value: guardedEval, writable: true, enumerable: false, configurable: true });

  function functionGuard(original, what) {
    return function () {
      const list = [];
      for (let i = 0; i < arguments.length; i++) list[i] = text(arguments[i]);
      for (let i = 0; i < list.length; i++) charge.source(list[i], what);
      return new.target === undefined ? apply(original, undefined, list) : construct(original, list, new.target);
    };
  }
  const FunctionOriginal = G.Function;
  replace(G, 'Function', FunctionOriginal, functionGuard(FunctionOriginal, 'Function'));
  const variants = [
    [getPrototypeOf(async function () {}).constructor, 'AsyncFunction'],
    [getPrototypeOf(function* () {}).constructor, 'GeneratorFunction'],
    [getPrototypeOf(async function* () {}).constructor, 'AsyncGeneratorFunction'],
  ];
  for (let i = 0; i < variants.length; i++) replace(null, null, variants[i][0], functionGuard(variants[i][0], variants[i][1]));

  // RegExp: the pattern and flags as the constructor would read them, once, as strings. A
  // RegExp's own source and flags are read through the intrinsic getters (an instance may
  // shadow 'source' or Symbol.match with its own properties).
  const RegExpOriginal = G.RegExp;
  const regExpProto = RegExpOriginal.prototype;
  const sourceOf = getOwnPropertyDescriptor(regExpProto, 'source').get;
  const flagGetters = [];
  const flagLetters = [['hasIndices', 'd'], ['global', 'g'], ['ignoreCase', 'i'], ['multiline', 'm'], ['dotAll', 's'],
    ['unicode', 'u'], ['unicodeSets', 'v'], ['sticky', 'y']];
  for (let i = 0; i < flagLetters.length; i++) {
    const desc = getOwnPropertyDescriptor(regExpProto, flagLetters[i][0]);
    if (desc !== undefined) flagGetters[flagGetters.length] = [desc.get, flagLetters[i][1]];
  }
  // The pattern's own source when it is a RegExp, else undefined.
  function ownSource(pattern) {
    if (pattern === null || typeof pattern !== 'object' || pattern === regExpProto) return undefined;
    try {
      return apply(sourceOf, pattern, []);
    } catch (error) {
      return undefined;
    }
  }
  function ownFlags(pattern) {
    let flags = '';
    for (let i = 0; i < flagGetters.length; i++) if (apply(flagGetters[i][0], pattern, [])) flags += flagGetters[i][1];
    return flags;
  }
  function isRegExp(pattern) {
    if (pattern === null || (typeof pattern !== 'object' && typeof pattern !== 'function')) return false;
    const matcher = pattern[Symbol.match];
    if (matcher !== undefined) return !!matcher;
    return ownSource(pattern) !== undefined;
  }
  // [pattern, flags] as strings, charged unless the pattern is a RegExp's: that source was
  // charged when it was made, or was a literal of the checked code (the definition check's
  // budget), and parsing it again costs no more than the first time (split and matchAll copy
  // their RegExp on every call).
  function patternOf(pattern, flags) {
    let source = ownSource(pattern);
    let flagText;
    if (source !== undefined) {
      return [source, flags === undefined ? ownFlags(pattern) : text(flags)];
    }
    if (isRegExp(pattern)) {
      source = text(pattern.source);
      flagText = flags === undefined ? text(pattern.flags) : text(flags);
    } else {
      source = pattern === undefined ? '' : text(pattern);
      flagText = flags === undefined ? '' : text(flags);
    }
    charge.source(source, 'RegExp');
    return [source, flagText];
  }
  function RegExpGuard(pattern, flags) {
    if (new.target === undefined && flags === undefined && isRegExp(pattern) && pattern.constructor === RegExpGuard) return pattern;
    const args = patternOf(pattern, flags);
    return new.target === undefined ? apply(RegExpOriginal, undefined, args) : construct(RegExpOriginal, args, new.target);
  }
  replace(G, 'RegExp', RegExpOriginal, RegExpGuard);
  const compile = regExpProto.compile;
  if (typeof compile === 'function') {
    const methods = {
      compile(pattern, flags) {
        if (ownSource(pattern) !== undefined && flags !== undefined) throw new TypeErrorCtor('Invalid flags supplied to RegExp constructor');
        return apply(compile, this, patternOf(pattern, flags));
      },
    };
    defineProperty(regExpProto, 'compile', { value: methods.compile, writable: true, enumerable: false, configurable: true });
  }
  // Per context, before the guards are frozen: what V8 added to an original since the snapshot
  // (not what the lockdown deleted from a guard since: the RegExp statics).
  function adopt() {
    for (let i = 0; i < originals.length; i++) {
      const keys = ownKeys(originals[i]);
      for (let k = 0; k < keys.length; k++) {
        if (!apply(setHas, known[i], [keys[k]]) && getOwnPropertyDescriptor(guards[i], keys[k]) === undefined) {
          defineProperty(guards[i], keys[k], getOwnPropertyDescriptor(originals[i], keys[k]));
        }
      }
    }
  }
  return [guards, adopt];
}`;
