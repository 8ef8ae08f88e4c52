/**
 * The JavaScript that freezes a context's realm once, when the context is made ("lockdown"). A
 * context serves many runs, by default of every organization (sandbox/isolate-pool.ts,
 * `contexts`), so whatever a run could write to and the next run could read would carry state,
 * code or a stashed resolver from one run, or one organization, into the next. After lockdown no object that outlives a run is writable by user code:
 *
 * - globalThis is frozen: no property may be added, changed or deleted (a top-level `var` in an
 *   indirect eval throws; a sloppy-mode implicit global is silently dropped);
 * - every object reachable from globalThis and from the hidden intrinsics (the prototypes only
 *   reachable through instances: iterators, generators, async functions, %TypedArray%, Intl
 *   segments, CallSite, %ThrowTypeError%, the `stack` accessors) is frozen, walking [[Prototype]],
 *   own string and symbol keys, and accessor getters and setters;
 * - the legacy RegExp statics (RegExp.$1, lastMatch, ...) are deleted: they read the last match
 *   of the whole realm, i.e. of the previous run;
 * - WebAssembly, SharedArrayBuffer, Atomics, FinalizationRegistry and WeakRef are deleted.
 *
 * Freezing makes inherited properties read-only, and in strict code assigning an own property
 * that shadows a read-only inherited one throws (the "override mistake"): `this.name = 'MyError'`
 * in an Error subclass, or `counts[word] = 1` with word 'constructor'. For the few properties code
 * commonly shadows, the data property is replaced by an accessor whose setter defines the own
 * property on the receiver, and throws only when the receiver is the frozen object itself (what
 * SES calls override taming). Hot methods (Array.prototype.push, Promise.prototype.then) are left
 * as data properties: an accessor there would cost every call.
 *
 * The source is the function `lockdown(extraRoots, errorPrototypes, late, deferred, beforeFinish)`,
 * called at the end of the bootstrap (sandbox/isolate-source.ts) after console, crypto, the
 * per-run Error.prepareStackTrace slot and the run caps (sandbox/run-caps-source.ts) are
 * installed. `deferred` are objects left to the second phase like `late`, and `beforeFinish` runs
 * at its start: the run caps' guards take there what V8 added to the originals they replace. It works in two phases, because contexts are made
 * from a V8 snapshot of an isolate where the bootstrap already ran (sandbox/context-snapshot.ts):
 *
 * 1. At snapshot time it walks the realm and freezes every object it reaches, except globalThis
 *    and the objects listed in `late`: V8 adds properties to a few intrinsics each time it makes a
 *    context from a snapshot (Error.stackTraceLimit, Promise.try, RegExp.escape, Float16 methods
 *    of DataView.prototype, the dispose symbols of the iterator prototypes, … depending on the V8
 *    version), and it aborts the process when one of them is frozen. `late` is found by a probe
 *    snapshot (`late` = null: nothing is frozen, the own keys of every object reached are
 *    returned for comparison with a context made from it).
 * 2. `finish()`, per context, before any user code: deletes the globals that must not exist
 *    (V8 adds WebAssembly back after a snapshot), freezes globalThis, the late objects and the
 *    intrinsics only an instance can reach that a snapshot cannot hold (Intl segments, CallSite),
 *    walking from them into whatever is not frozen yet: ~70 objects instead of ~770.
 *
 * Without a snapshot (the fallback) both phases run in each context, at twice the cost.
 *
 * Why this is not SES's `lockdown()` (measured: it refuses the run caps' guards, cannot go into the
 * snapshot, and costs ≈ 6× per context): docs/sandbox.md, "Context reuse".
 */
export const LOCKDOWN_SOURCE = String.raw`function lockdown(extraRoots, errorPrototypes, late, deferred, beforeFinish) {
  'use strict';
  const G = globalThis;
  const freeze = Object.freeze;
  const isFrozen = Object.isFrozen;
  const defineProperty = Object.defineProperty;
  const getPrototypeOf = Object.getPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ownKeys = Reflect.ownKeys;
  const hasOwn = Object.hasOwn;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;

  const removed = ['WebAssembly', 'SharedArrayBuffer', 'Atomics', 'FinalizationRegistry', 'WeakRef'];
  const statics = ['input', '$_', 'lastMatch', '$&', 'lastParen', '$+', 'leftContext', '$' + '\x60', 'rightContext', "$'",
    '$1', '$2', '$3', '$4', '$5', '$6', '$7', '$8', '$9'];
  for (let i = 0; i < statics.length; i++) {
    if (!delete RegExp[statics[i]]) throw new TypeErrorCtor('lockdown could not delete RegExp.' + statics[i]);
  }

  // The values the tamed accessors hold: no property leads to them any more (their getter returns
  // them), so the walk below takes them as roots, or Object.prototype.toString would stay open.
  const tamedValues = [];
  function tame(home, key) {
    const desc = getOwnPropertyDescriptor(home, key);
    if (desc === undefined || !hasOwn(desc, 'value')) return;
    const value = desc.value;
    if (value !== null && (typeof value === 'object' || typeof value === 'function')) tamedValues.push(value);
    defineProperty(home, key, {
      get() { return value; },
      set(next) {
        if (this === home) throw new TypeErrorCtor("Cannot assign to read only property '" + StringCtor(key) + "' of a frozen intrinsic");
        if (hasOwn(this, key)) this[key] = next;
        else defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
      },
      enumerable: desc.enumerable,
      configurable: false,
    });
  }
  const objectKeys = ownKeys(Object.prototype);
  for (let i = 0; i < objectKeys.length; i++) tame(Object.prototype, objectKeys[i]);
  for (let i = 0; i < errorPrototypes.length; i++) {
    tame(errorPrototypes[i], 'name');
    tame(errorPrototypes[i], 'message');
    tame(errorPrototypes[i], 'constructor');
    tame(errorPrototypes[i], 'toString');
  }
  tame(Function.prototype, 'constructor');
  tame(Function.prototype, 'toString');
  tame(Array.prototype, 'constructor');
  tame(Array.prototype, 'toString');

  // Intrinsics that no property path from globalThis reaches: each is the prototype (or a
  // property) of something only an instance leads to.
  const roots = [G];
  for (let i = 0; i < extraRoots.length; i++) roots.push(extraRoots[i]);
  for (let i = 0; i < tamedValues.length; i++) roots.push(tamedValues[i]);
  roots.push(
    function* () {}, async function () {}, async function* () {},
    [][Symbol.iterator](), new Map().entries(), new Set().values(), ''[Symbol.iterator](), 'a'.matchAll(/a/g),
    Iterator.prototype.map.call([].values(), (x) => x), Iterator.from({ next() { return { done: true }; } }),
    getPrototypeOf(Uint8Array),
    getOwnPropertyDescriptor((function () { 'use strict'; return arguments; })(), 'callee').get,
    // Both halves of an error's own 'stack' accessor: one getter and one setter serve every error
    // of the realm, and nothing but an error instance leads to them.
    getOwnPropertyDescriptor(new Error('probe'), 'stack').get,
    getOwnPropertyDescriptor(new Error('probe'), 'stack').set,
  );
  for (let i = 0; i < roots.length; i++) {
    if (roots[i] === null || (typeof roots[i] !== 'object' && typeof roots[i] !== 'function')) throw new TypeErrorCtor('lockdown found no intrinsic at root ' + i);
  }

  // Phase 1: every object reachable from the roots, in a deterministic order (the probe and the
  // snapshot must list the same objects at the same indices).
  const objects = roots.slice();
  const index = new Map();
  for (let i = 0; i < roots.length; i++) if (!index.has(roots[i])) index.set(roots[i], i);
  const visit = (value) => {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function') || index.has(value)) return;
    index.set(value, objects.length);
    objects.push(value);
  };
  for (let at = 0; at < objects.length; at++) {
    const value = objects[at];
    visit(getPrototypeOf(value));
    const keys = ownKeys(value);
    for (let i = 0; i < keys.length; i++) {
      const desc = getOwnPropertyDescriptor(value, keys[i]);
      if (hasOwn(desc, 'value')) {
        visit(desc.value);
      } else {
        visit(desc.get);
        visit(desc.set);
      }
    }
  }
  if (late === null) {
    const keys = [];
    for (let i = 0; i < objects.length; i++) keys.push(ownKeys(objects[i]).map(StringCtor).join('\u0000'));
    return { objects, keys };
  }
  const later = [G];
  for (let i = 0; i < deferred.length; i++) later.push(deferred[i]);
  const skip = new Set(later);
  for (let i = 0; i < late.length; i++) {
    if (objects[late[i]] === undefined) throw new TypeErrorCtor('lockdown has no object ' + late[i]);
    later.push(objects[late[i]]);
    skip.add(objects[late[i]]);
  }
  for (let i = 0; i < objects.length; i++) {
    if (skip.has(objects[i])) continue;
    freeze(objects[i]);
    if (!isFrozen(objects[i])) throw new TypeErrorCtor('lockdown could not freeze an intrinsic');
  }

  // Phase 2, per context: what the snapshot could not hold frozen, and everything not frozen
  // that it leads to.
  return function finish(extraGlobals) {
    beforeFinish();
    for (let i = 0; i < removed.length; i++) delete G[removed[i]];
    for (let i = 0; i < extraGlobals.length; i++) delete G[extraGlobals[i]];
    const todo = later.slice();
    if (typeof Intl === 'object' && typeof Intl.Segmenter === 'function') {
      const segments = new Intl.Segmenter().segment('a');
      todo.push(getPrototypeOf(segments), getPrototypeOf(segments[Symbol.iterator]()));
    }
    // CallSite objects exist only inside Error.prepareStackTrace, and their prototype is mutable.
    const previous = Error.prepareStackTrace;
    let frames;
    Error.prepareStackTrace = (error, callSites) => callSites;
    try {
      frames = new Error('probe').stack;
    } finally {
      Error.prepareStackTrace = previous;
    }
    todo.push(getPrototypeOf(frames[0]));
    const pushOpen = (value) => {
      if (value !== null && (typeof value === 'object' || typeof value === 'function') && !isFrozen(value)) todo.push(value);
    };
    while (todo.length > 0) {
      const value = todo.pop();
      if (isFrozen(value)) continue;
      freeze(value);
      if (!isFrozen(value)) throw new TypeErrorCtor('lockdown could not freeze an intrinsic');
      pushOpen(getPrototypeOf(value));
      const keys = ownKeys(value);
      for (let i = 0; i < keys.length; i++) {
        const desc = getOwnPropertyDescriptor(value, keys[i]);
        if (hasOwn(desc, 'value')) {
          pushOpen(desc.value);
        } else {
          pushOpen(desc.get);
          pushOpen(desc.set);
        }
      }
    }
  };
}`;
