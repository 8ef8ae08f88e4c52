/**
 * The JavaScript that runs once inside every new context, before any user code: it builds
 * `console`, `crypto` and the per-run machinery (`ctx`, host calls, logs, randomness), then
 * freezes the realm (sandbox/lockdown-source.ts). It is a string because it executes in the
 * isolate, not in Node; it runs once per process, in the snapshot every context is made from
 * (context-snapshot.ts), or in each context when no snapshot could be made.
 *
 * A context serves many runs, of every tenant by default (isolate-pool.ts, `contexts`). Everything
 * a run may change lives in one run record that `begin` replaces at the start of every run: host
 * calls waiting or queued, log counters, the entropy block, Math.random's generator, route markers,
 * the errors the bootstrap made, Error.prepareStackTrace, the input and ids. Call ids keep counting across runs, so an answer meant for an earlier run finds
 * no waiter; ctx functions carry their run and refuse to work for another one.
 *
 * Invariants the source keeps:
 * - The host handles it receives (`send`, `log`, `entropy`: synchronous isolated-vm Callbacks
 *   taking and returning primitives only) stay in this closure; user code can reach none of them, and no
 *   `Reference` or `ExternalCopy` exists inside the isolate at all.
 * - Intrinsics it relies on are captured before user code runs (and are frozen anyway), and its
 *   bookkeeping lives in null-prototype objects; the host re-validates every message it receives.
 * - Host answers arrive as JSON text and are parsed here, so every value user code sees was made
 *   inside the isolate.
 *
 * The source is the function `bootstrap(late)`; `late` is what lockdown leaves for its second
 * phase (lockdown-source.ts), or null for the probe that finds it. It returns
 * `[begin, start, result, wait, deliver, wire, probe]` for the host to hold as References (probe
 * is the probe's finding, else null):
 * - `wire(send, log, entropy, boundsJson, bootGlobal)` hands over the host's callbacks and this
 *   pool's bounds, deletes the global `bootGlobal` (the property the host reached the bootstrap
 *   through) and finishes the lockdown; once per context, before any run;
 * - `begin(inputJson, executionId, sessionId, node)` opens a run (before its module is evaluated);
 * - `start(namespace)` is called by the run's driver module once the code's module has evaluated
 *   (host-bridge.ts), and calls its default export;
 * - `result()` is the run's `[kind, route|code|call, output|message, logsDropped, outsideBytes, capped]` once settled,
 *   else 'pending' (the default export is awaiting) or 'unstarted' (the module never finished);
 * - `wait()` resolves with that tuple when the run settles;
 * - `deliver(call, ok, json)` answers one host call.
 */
import { propertyEscapes } from '../shared/workflow/property-escapes.ts';
import { LOCKDOWN_SOURCE } from './lockdown-source.ts';
import { RUN_CAPS_SOURCE } from './run-caps-source.ts';

export const ISOLATE_SOURCE = String.raw`(function bootstrap(late) {
  'use strict';
  const G = globalThis;
  const create = Object.create;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const getPrototypeOf = Object.getPrototypeOf;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const apply = Reflect.apply;
  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const StringCtor = String;
  const Uint8ArrayCtor = Uint8Array;
  const stringSlice = String.prototype.slice;
  const toLowerCase = String.prototype.toLowerCase;
  const objectKeys = Object.keys;
  const hasOwnProperty = Object.prototype.hasOwnProperty;
  const charCodeAt = String.prototype.charCodeAt;
  const numberToString = Number.prototype.toString;
  const imul = Math.imul;
  const WeakMapCtor = WeakMap;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const weakHas = WeakMap.prototype.has;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const typedBuffer = getOwnPropertyDescriptor(typedArrayProto, 'buffer').get;
  const typedOffset = getOwnPropertyDescriptor(typedArrayProto, 'byteOffset').get;
  const typedLength = getOwnPropertyDescriptor(typedArrayProto, 'byteLength').get;
  const typedTag = getOwnPropertyDescriptor(typedArrayProto, Symbol.toStringTag).get;
  // Host callbacks and bounds, handed over by wire(): a context is made from a snapshot taken
  // before any host or pool existed.
  let send;
  let log;
  let entropy;
  let bounds;

  // Run phases.
  const BEGUN = 1;
  const STARTED = 2;
  const SETTLED = 3;

  function newRun(inputJson, ids) {
    const run = create(null);
    run.phase = BEGUN;
    run.inputJson = inputJson;
    run.ids = ids;
    // Host calls: at most maxCallsInFlight are with the host; the rest wait here, in memory that
    // counts against this isolate, not the host's.
    run.pending = create(null);
    run.queue = create(null);
    run.inFlight = 0;
    run.head = 0;
    run.tail = 0;
    run.logged = 0;
    run.dropped = 0;
    // Randomness comes from the host's CSPRNG a block at a time; bytes left from a block belong to
    // the run that drew it.
    run.block = '';
    run.blockAt = 0;
    // Math.random's generator (xoshiro128**), seeded from that block on the run's first call.
    run.seeded = false;
    run.s0 = 0;
    run.s1 = 0;
    run.s2 = 0;
    run.s3 = 0;
    // Errors made here are recorded, so an uncaught one reports its own code; user code cannot
    // add to these maps.
    run.known = new WeakMapCtor();
    run.routes = new WeakMapCtor();
    run.routeCalls = 0;
    run.prepareStackTrace = undefined;
    // What the run caps charged (run-caps-source.ts): bytes outside the heap, Intl objects made,
    // characters Intl.Segmenter copied, source characters handed to the compiler, Unicode property
    // escapes in them; and whether a cap refused the run anything (its tenant goes on probation).
    run.outsideBytes = 0;
    run.intlObjects = 0;
    run.segmentedChars = 0;
    run.sourceChars = 0;
    run.escapes = 0;
    run.capped = 0;
    run.tuple = null;
    run.waiter = null;
    return run;
  }
  // The record in force; the bootstrap itself runs under a closed one.
  let current = newRun('null', null);
  current.phase = SETTLED;
  let nextCall = 0;

  function own(target, name, value) {
    defineProperty(target, name, { value, writable: true, enumerable: false, configurable: true });
  }

  function truncate(text, max) {
    return text.length > max ? apply(stringSlice, text, [0, max]) + '…' : text;
  }

  function describe(value) {
    try {
      if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
        const name = value.name;
        const message = value.message;
        if (typeof message === 'string') {
          return truncate((typeof name === 'string' && name !== '' ? name + ': ' : '') + message, bounds.maxMessageChars);
        }
      }
      return truncate(StringCtor(value), bounds.maxMessageChars);
    } catch (error) {
      return 'A value that cannot be described was thrown.';
    }
  }

  class LimitExceeded extends ErrorCtor {
    constructor(message, limit) {
      super(message);
      own(this, 'code', 'limit_exceeded');
      own(this, 'limit', limit);
    }
  }
  own(LimitExceeded.prototype, 'name', 'LimitExceeded');

  function localError(code, message) {
    const error = new ErrorCtor(message);
    own(error, 'code', code);
    apply(weakSet, current.known, [error, { code, message, call: 0 }]);
    return error;
  }

  function hostError(run, call, data) {
    const code = typeof data.code === 'string' ? data.code : 'internal_error';
    const message = typeof data.message === 'string' ? data.message : 'The host call failed.';
    let error;
    if (code === 'limit_exceeded') {
      error = new LimitExceeded(message, data.limit === undefined ? null : data.limit);
    } else {
      error = new ErrorCtor(message);
      own(error, 'code', code);
      if (data.limit !== undefined) own(error, 'limit', data.limit);
    }
    apply(weakSet, run.known, [error, { code, message, call }]);
    return error;
  }

  function rejected(error) {
    return new PromiseCtor((resolve, reject) => reject(error));
  }

  function call(run, op, args) {
    if (run !== current) return rejected(localError('call_refused', 'This ctx belongs to a run that has ended.'));
    let json;
    try {
      json = jsonStringify(args);
    } catch (error) {
      return rejected(localError('invalid_request_body', 'ctx.' + op + ' takes JSON data: ' + describe(error)));
    }
    if (json.length > bounds.maxCallBytes) {
      return rejected(localError('payload_too_large', 'ctx.' + op + ' arguments are larger than ' + bounds.maxCallBytes + ' bytes.'));
    }
    return new PromiseCtor((resolve, reject) => {
      const id = ++nextCall;
      run.pending[id] = { resolve, reject };
      if (run.inFlight < bounds.maxCallsInFlight) {
        run.inFlight++;
        send(id, op, json);
      } else {
        run.queue[run.tail++] = [id, op, json];
      }
    });
  }

  function deliver(id, ok, json) {
    const run = current;
    const waiter = run.pending[id];
    if (waiter === undefined) return;
    delete run.pending[id];
    run.inFlight--;
    while (run.inFlight < bounds.maxCallsInFlight && run.head < run.tail) {
      const next = run.queue[run.head];
      delete run.queue[run.head++];
      run.inFlight++;
      send(next[0], next[1], next[2]);
    }
    if (ok) waiter.resolve(json === '' ? null : jsonParse(json));
    else waiter.reject(hostError(run, id, jsonParse(json)));
  }

  // Logging: bounded here so a loop of console.log cannot flood the host with messages.
  function format(value) {
    if (typeof value === 'string') return value;
    if (value !== null && typeof value === 'object' && value instanceof ErrorCtor) return describe(value);
    try {
      const json = jsonStringify(value);
      return json === undefined ? StringCtor(value) : json;
    } catch (error) {
      return describe(value);
    }
  }
  function emit(level, args) {
    const run = current;
    if (run.logged >= bounds.maxLogEntries) {
      run.dropped++;
      return;
    }
    run.logged++;
    let text = '';
    for (let i = 0; i < args.length && text.length <= bounds.maxLogEntryBytes; i++) {
      text += (i === 0 ? '' : ' ') + format(args[i]);
    }
    log(level, truncate(text, bounds.maxLogEntryBytes));
  }
  function logger(level) {
    return function () {
      const args = create(null);
      let n = 0;
      for (; n < arguments.length; n++) args[n] = arguments[n];
      args.length = n;
      emit(level, args);
    };
  }
  const logFns = freeze({ debug: logger('debug'), info: logger('info'), warn: logger('warn'), error: logger('error') });
  const ctxLog = logger('info');
  own(ctxLog, 'debug', logFns.debug);
  own(ctxLog, 'info', logFns.info);
  own(ctxLog, 'warn', logFns.warn);
  own(ctxLog, 'error', logFns.error);
  freeze(ctxLog);
  own(G, 'console', freeze({ log: ctxLog, debug: logFns.debug, info: logFns.info, warn: logFns.warn, error: logFns.error, trace: logFns.debug }));

  function randomByte() {
    const run = current;
    if (run.blockAt >= run.block.length) {
      const next = entropy(256);
      if (typeof next !== 'string' || next.length === 0) {
        throw localError('call_refused', 'This run has drawn its ' + bounds.maxRandomBytes + ' random bytes.');
      }
      run.block = next;
      run.blockAt = 0;
    }
    return apply(charCodeAt, run.block, [run.blockAt++]);
  }
  function getRandomValues(view) {
    const tag = apply(typedTag, view, []);
    if (tag === undefined || tag === 'Float16Array' || tag === 'Float32Array' || tag === 'Float64Array') {
      throw new TypeErrorCtor('crypto.getRandomValues takes an integer typed array.');
    }
    const length = apply(typedLength, view, []);
    if (length > 65536) throw localError('call_refused', 'crypto.getRandomValues fills at most 65536 bytes.');
    const bytes = new Uint8ArrayCtor(apply(typedBuffer, view, []), apply(typedOffset, view, []), length);
    for (let i = 0; i < length; i++) bytes[i] = randomByte();
    return view;
  }
  function hex(byte) {
    return (byte < 16 ? '0' : '') + apply(numberToString, byte, [16]);
  }
  function randomUUID() {
    let out = '';
    for (let i = 0; i < 16; i++) {
      let byte = randomByte();
      if (i === 6) byte = (byte & 0x0f) | 0x40;
      if (i === 8) byte = (byte & 0x3f) | 0x80;
      out += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + hex(byte);
    }
    return out;
  }
  own(G, 'crypto', freeze({ getRandomValues, randomUUID }));

  // Math.random draws from a generator of the run's own, seeded from the host's CSPRNG on its first
  // call: V8's generator belongs to the context, and a context serves many runs (of many
  // organizations, docs/sandbox.md "Whose runs a context serves"), so one run could read enough of
  // its values to predict another's. xoshiro128** (Blackman and Vigna), two 32-bit words per value.
  function word(run) {
    const s0 = run.s0;
    const s1 = run.s1;
    const s2 = run.s2 ^ s0;
    const s3 = run.s3 ^ s1;
    const x = imul(s1, 5);
    const out = imul((x << 7) | (x >>> 25), 9) >>> 0;
    run.s0 = s0 ^ s3;
    run.s1 = s1 ^ s2;
    run.s2 = s2 ^ (s1 << 9);
    run.s3 = (s3 << 11) | (s3 >>> 21);
    return out;
  }
  function seedWord() {
    return ((randomByte() << 24) | (randomByte() << 16) | (randomByte() << 8) | randomByte()) >>> 0;
  }
  function seed(run) {
    run.s0 = seedWord();
    run.s1 = seedWord();
    run.s2 = seedWord();
    run.s3 = seedWord();
    // The one state xoshiro never leaves.
    if ((run.s0 | run.s1 | run.s2 | run.s3) === 0) run.s0 = 1;
    run.seeded = true;
  }
  // A method, like the built-in: no prototype, not a constructor.
  const { random } = {
    random() {
      const run = current;
      if (!run.seeded) seed(run);
      return ((word(run) >>> 5) * 67108864 + (word(run) >>> 6)) / 9007199254740992;
    },
  };
  own(Math, 'random', random);

  // Error.prepareStackTrace belongs to the run that set it: V8 reads it through this accessor
  // (Error.stackTraceLimit, which V8 reads as a data property only, is frozen instead).
  defineProperty(ErrorCtor, 'prepareStackTrace', {
    get() { return current.prepareStackTrace; },
    set(value) {
      if (this === ErrorCtor) current.prepareStackTrace = value;
      else defineProperty(this, 'prepareStackTrace', { value, writable: true, enumerable: true, configurable: true });
    },
    enumerable: false,
    configurable: false,
  });

  function serialize(value) {
    if (value === undefined) return 'null';
    let json;
    try {
      json = jsonStringify(value);
    } catch (error) {
      return { invalid: 'The output is not JSON data: ' + describe(error) };
    }
    if (typeof json !== 'string') return { invalid: 'The output is not JSON data (a ' + typeof value + ' was returned).' };
    if (json.length > bounds.maxOutputBytes) return { invalid: 'The output is larger than ' + bounds.maxOutputBytes + ' bytes.' };
    return json;
  }

  function failure(run, error) {
    if (error !== null && (typeof error === 'object' || typeof error === 'function') && apply(weakHas, run.known, [error])) {
      const record = apply(weakGet, run.known, [error]);
      if (record.call > 0) return ['host_error', '' + record.call, '', run.dropped];
      return ['error', record.code, record.message, run.dropped];
    }
    return ['error', 'code_error', describe(error), run.dropped];
  }

  function outputOf(run, value) {
    let route = '';
    if (value !== null && typeof value === 'object' && apply(weakHas, run.routes, [value])) {
      const chosen = apply(weakGet, run.routes, [value]);
      route = chosen.name;
      value = chosen.output;
    } else if (run.routeCalls > 0) {
      return ['error', 'output_invalid', 'ctx.route() was called but its result was not returned; return ctx.route(name, output) to take a route.', run.dropped];
    }
    const json = serialize(value);
    if (typeof json !== 'string') return ['error', 'output_invalid', json.invalid, run.dropped];
    return [route === '' ? 'output' : 'route', route, json, run.dropped];
  }

  function settle(run, tuple) {
    if (run.phase === SETTLED) return;
    run.phase = SETTLED;
    // What the run charged outside the heap rides along: the pool retires an isolate whose runs
    // charged more than it may keep (memory a run can leave behind, e.g. stamped on a frozen object).
    // So does whether a run cap refused it anything: the pool puts its tenant on probation.
    tuple[4] = run.outsideBytes;
    tuple[5] = run.capped;
    run.tuple = tuple;
    const waiter = run.waiter;
    run.waiter = null;
    if (waiter !== null) waiter(tuple);
  }

  // ctx.fetch: the init fields the host takes (a WHATWG subset), copied as plain data; others
  // (signal, cache, mode…) are ignored as a browser ignores what it does not know.
  function fetchInit(init) {
    const out = create(null);
    if (init === undefined || init === null) return out;
    if (typeof init !== 'object') throw new TypeErrorCtor('ctx.fetch init must be an object.');
    if (init.method !== undefined) out.method = StringCtor(init.method);
    if (init.headers !== undefined && init.headers !== null) {
      const headers = create(null);
      const source = init.headers;
      const names = objectKeys(source);
      for (let i = 0; i < names.length; i++) headers[names[i]] = StringCtor(source[names[i]]);
      out.headers = headers;
    }
    if (init.body !== undefined && init.body !== null) {
      if (typeof init.body !== 'string') throw new TypeErrorCtor('ctx.fetch sends a string body (JSON.stringify objects).');
      out.body = init.body;
    }
    if (init.redirect !== undefined) out.redirect = StringCtor(init.redirect);
    if (init.timeoutMs !== undefined) out.timeoutMs = init.timeoutMs;
    if (init.maxResponseBytes !== undefined) out.maxResponseBytes = init.maxResponseBytes;
    return out;
  }

  // The answer as a Response-shaped object: status, headers.get, text(), json(), each body read once.
  function fetchResponse(answer) {
    const headers = create(null);
    const names = objectKeys(answer.headers);
    for (let i = 0; i < names.length; i++) headers[names[i]] = answer.headers[names[i]];
    const body = answer.body;
    let used = false;
    const consume = () => {
      if (used) throw new TypeErrorCtor('The body has already been read.');
      used = true;
      return body;
    };
    const key = (name) => apply(toLowerCase, StringCtor(name), []);
    return freeze({
      ok: answer.status >= 200 && answer.status < 300,
      status: answer.status,
      statusText: answer.statusText,
      url: answer.url,
      redirected: answer.redirected,
      headers: freeze({
        get: (name) => (apply(hasOwnProperty, headers, [key(name)]) ? headers[key(name)] : null),
        has: (name) => apply(hasOwnProperty, headers, [key(name)]),
        forEach(fn) {
          const all = objectKeys(headers);
          for (let i = 0; i < all.length; i++) fn(headers[all[i]], all[i]);
        },
      }),
      get bodyUsed() {
        return used;
      },
      text: async () => consume(),
      json: async () => jsonParse(consume()),
    });
  }

  function makeCtx(run) {
    const ids = run.ids;
    return freeze({
      ids: freeze({ executionId: ids.executionId, sessionId: ids.sessionId, node: ids.node }),
      objects: freeze({
        get: (alias) => call(run, 'objects.get', [alias]),
        put: (alias, value) => call(run, 'objects.put', [alias, value]),
        list: (options) => call(run, 'objects.list', [options === undefined ? null : options]),
      }),
      thread: freeze({ post: (item) => call(run, 'thread.post', [item]) }),
      graph: freeze({
        mutate: (mutations) => call(run, 'graph.mutate', [mutations]),
        query: (query) => call(run, 'graph.query', [query]),
      }),
      fetch(input, init) {
        let args;
        try {
          args = [typeof input === 'string' ? input : StringCtor(input), fetchInit(init)];
        } catch (error) {
          return rejected(error);
        }
        return apply(promiseThen, call(run, 'fetch', args), [fetchResponse]);
      },
      credentials: freeze({ get: (name) => call(run, 'credentials.get', [name]) }),
      log: ctxLog,
      route(name, output) {
        if (typeof name !== 'string' || name.length === 0) throw new TypeErrorCtor('ctx.route takes a route name.');
        run.routeCalls++;
        const marker = freeze(create(null));
        apply(weakSet, run.routes, [marker, { name, output }]);
        return marker;
      },
      LimitExceeded,
    });
  }

  function begin(inputJson, executionId, sessionId, node) {
    current = newRun(inputJson, { executionId, sessionId, node });
  }

  // Called by the driver module with the code's module namespace, after the code's top level ran.
  function start(namespace) {
    const run = current;
    if (run.phase !== BEGUN) return;
    run.phase = STARTED;
    let fn;
    try {
      fn = namespace.default;
    } catch (error) {
      settle(run, failure(run, error));
      return;
    }
    if (typeof fn !== 'function') {
      settle(run, ['error', 'code_error', 'The module has no default export function.', run.dropped]);
      return;
    }
    let input;
    try {
      input = jsonParse(run.inputJson);
    } catch (error) {
      settle(run, ['error', 'internal_error', 'The input is not JSON.', run.dropped]);
      return;
    }
    const ctx = makeCtx(run);
    // An async function adopts a returned thenable exactly as awaiting the call would.
    const settled = (async () => fn(input, ctx))();
    apply(promiseThen, settled, [
      (value) => {
        let tuple;
        try {
          tuple = outputOf(run, value);
        } catch (error) {
          tuple = failure(run, error);
        }
        settle(run, tuple);
      },
      (error) => settle(run, failure(run, error)),
    ]);
  }

  function result() {
    const run = current;
    if (run.phase === SETTLED) return run.tuple;
    return run.phase === STARTED ? 'pending' : 'unstarted';
  }

  function wait() {
    const run = current;
    return new PromiseCtor((resolve) => {
      if (run.phase === SETTLED) resolve(run.tuple);
      else run.waiter = resolve;
    });
  }

  // The run caps charge the run in force; past a bound they throw a RangeError naming it (and
  // mark the run as refused, whether or not its code catches the error). Every check of a charge
  // comes before any of its counts moves.
  const countEscapes = ${propertyEscapes.toString()};
  function refuse(run, message) {
    run.capped = 1;
    throw new RangeErrorCtor(message);
  }
  function checkBytes(run, bytes, what) {
    const next = run.outsideBytes + bytes;
    if (next > bounds.maxOutsideHeapBytes) {
      refuse(run, what + ' would take this run past its ' + bounds.maxOutsideHeapBytes + ' bytes of memory outside the JavaScript heap (maxOutsideHeapBytes).');
    }
    return next;
  }
  const charge = freeze({
    bytes(bytes, what) {
      const run = current;
      run.outsideBytes = checkBytes(run, bytes, what);
    },
    // An Intl object: ICU memory, and ICU's time to build it (≈ 0.15–0.3 ms for a DateTimeFormat).
    intl(bytes, what) {
      const run = current;
      if (run.intlObjects + 1 > bounds.maxIntlObjects) {
        refuse(run, what + ' would take this run past its ' + bounds.maxIntlObjects + ' Intl objects (maxIntlObjects); make one formatter and reuse it.');
      }
      const next = checkBytes(run, bytes, what);
      run.intlObjects++;
      run.outsideBytes = next;
    },
    // A copy of a string made by Intl.Segmenter: its memory, and ICU's time over the text.
    segmented(chars, what) {
      const run = current;
      const total = run.segmentedChars + chars;
      if (total > bounds.maxSegmentedChars) {
        refuse(run, what + ' would take this run past its ' + bounds.maxSegmentedChars + ' characters segmented by Intl.Segmenter (maxSegmentedChars).');
      }
      const next = checkBytes(run, 2 * chars + 4096, what);
      run.segmentedChars = total;
      run.outsideBytes = next;
    },
    source(text, what) {
      const run = current;
      const chars = run.sourceChars + text.length;
      if (chars > bounds.maxSourceChars) {
        refuse(run, what + ' would take this run past its ' + bounds.maxSourceChars + ' characters of source compiled at run time (maxSourceChars).');
      }
      const escapes = run.escapes + countEscapes(text);
      if (escapes > bounds.maxPropertyEscapes) {
        refuse(run, what + ' would take this run past its ' + bounds.maxPropertyEscapes + ' Unicode property escapes (\\p{…}, \\P{…}) compiled at run time (maxPropertyEscapes).');
      }
      run.sourceChars = chars;
      run.escapes = escapes;
    },
  });
  const runCaps = ${RUN_CAPS_SOURCE};
  const capped = runCaps(charge, countEscapes);

  const lockdown = ${LOCKDOWN_SOURCE};
  const errorPrototypes = [LimitExceeded.prototype];
  const errorNames = ['Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError', 'URIError', 'AggregateError', 'SuppressedError'];
  for (let i = 0; i < errorNames.length; i++) {
    if (typeof G[errorNames[i]] === 'function') errorPrototypes.push(G[errorNames[i]].prototype);
  }
  const locked = lockdown([LimitExceeded], errorPrototypes, late, capped[0], capped[1]);
  if (late === null) return [begin, start, result, wait, deliver, null, locked];

  function wire(sendFn, logFn, entropyFn, boundsJson, bootGlobal) {
    if (bounds !== undefined) throw new TypeErrorCtor('This context is wired already.');
    send = sendFn;
    log = logFn;
    entropy = entropyFn;
    bounds = jsonParse(boundsJson);
    locked([bootGlobal]);
  }

  return [begin, start, result, wait, deliver, wire, null];
})`;
