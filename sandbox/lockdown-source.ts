/**
 * The JavaScript that freezes a context's realm once, when the context is made ("lockdown"). A
 * context serves many runs of one tenant (sandbox/isolate-pool.ts), so whatever a run could
 * write to and the next run could read would carry state, code or a stashed resolver from one
 * run into the next. After lockdown no object that outlives a run is writable by user code:
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
 * The source is the function `lockdown(extraRoots, errorPrototypes, plan)`: sandbox/isolate-source.ts
 * calls it at the end of the bootstrap, after console, crypto and the per-run Error.prepareStackTrace
 * slot are installed, and returns its plan to the host (see the walk below).
 */
export const LOCKDOWN_SOURCE = String.raw`function lockdown(extraRoots, errorPrototypes, plan) {
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
  for (let i = 0; i < removed.length; i++) delete G[removed[i]];
  const statics = ['input', '$_', 'lastMatch', '$&', 'lastParen', '$+', 'leftContext', '$' + '\x60', 'rightContext', "$'",
    '$1', '$2', '$3', '$4', '$5', '$6', '$7', '$8', '$9'];
  for (let i = 0; i < statics.length; i++) {
    if (!delete RegExp[statics[i]]) throw new TypeErrorCtor('lockdown could not delete RegExp.' + statics[i]);
  }

  function tame(home, key) {
    const desc = getOwnPropertyDescriptor(home, key);
    if (desc === undefined || !hasOwn(desc, 'value')) return;
    const value = desc.value;
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
  roots.push(
    function* () {}, async function () {}, async function* () {},
    [][Symbol.iterator](), new Map().entries(), new Set().values(), ''[Symbol.iterator](), 'a'.matchAll(/a/g),
    Iterator.prototype.map.call([].values(), (x) => x), Iterator.from({ next() { return { done: true }; } }),
    getPrototypeOf(Uint8Array),
    getOwnPropertyDescriptor((function () { 'use strict'; return arguments; })(), 'callee').get,
    getOwnPropertyDescriptor(new Error('probe'), 'stack').get,
  );
  if (typeof Intl === 'object' && typeof Intl.Segmenter === 'function') {
    const segments = new Intl.Segmenter().segment('a');
    roots.push(segments, segments[Symbol.iterator]());
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
  roots.push(frames[0]);
  for (let i = 0; i < roots.length; i++) {
    if (roots[i] === null || (typeof roots[i] !== 'object' && typeof roots[i] !== 'function')) throw new TypeErrorCtor('lockdown found no intrinsic at root ' + i);
  }

  // The objects to freeze, roots first. Every context of an isolate has the same graph (the same
  // V8 snapshot, the same bootstrap), so the first context walks it and records how each object
  // was reached, as a plan of [parent index, how, key] steps (how: 0 data property, 1 getter,
  // 2 setter, 3 [[Prototype]]; plus 4 when the key is the well-known symbol Symbol[key]). Later
  // contexts follow the plan instead of walking: the walk reads a descriptor for every property
  // of a cold realm and costs four times as much. Each step must land on an object, else the
  // plan is not this realm's and lockdown fails (the context is not used).
  const objects = roots.slice();
  let steps = plan;
  if (steps === undefined) {
    steps = [];
    const index = new Map();
    for (let i = 0; i < roots.length; i++) if (!index.has(roots[i])) index.set(roots[i], i);
    const visit = (parent, how, key, value) => {
      if (value === null || (typeof value !== 'object' && typeof value !== 'function') || index.has(value)) return;
      if (typeof key === 'symbol') {
        const name = StringCtor(key.description).slice(7);
        if (Symbol[name] !== key) throw new TypeErrorCtor('lockdown found a property keyed by ' + StringCtor(key));
        how += 4;
        key = name;
      }
      index.set(value, objects.length);
      objects.push(value);
      steps.push(parent, how, key);
    };
    for (let at = 0; at < objects.length; at++) {
      const value = objects[at];
      visit(at, 3, null, getPrototypeOf(value));
      const keys = ownKeys(value);
      for (let i = 0; i < keys.length; i++) {
        const desc = getOwnPropertyDescriptor(value, keys[i]);
        if (hasOwn(desc, 'value')) {
          visit(at, 0, keys[i], desc.value);
        } else {
          visit(at, 1, keys[i], desc.get);
          visit(at, 2, keys[i], desc.set);
        }
      }
    }
  } else {
    for (let i = 0; i < steps.length; i += 3) {
      const parent = objects[steps[i]];
      const how = steps[i + 1] & 3;
      const key = steps[i + 1] >= 4 ? Symbol[steps[i + 2]] : steps[i + 2];
      const value = how === 3 ? getPrototypeOf(parent)
        : how === 0 ? getOwnPropertyDescriptor(parent, key).value
        : how === 1 ? getOwnPropertyDescriptor(parent, key).get
        : getOwnPropertyDescriptor(parent, key).set;
      if (value === null || (typeof value !== 'object' && typeof value !== 'function')) throw new TypeErrorCtor('lockdown plan does not fit this realm');
      objects.push(value);
    }
  }
  for (let i = 0; i < objects.length; i++) {
    freeze(objects[i]);
    if (!isFrozen(objects[i])) throw new TypeErrorCtor('lockdown could not freeze an intrinsic');
  }
  return steps;
}`;
