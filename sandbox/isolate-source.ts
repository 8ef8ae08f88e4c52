/**
 * The JavaScript that runs inside every fresh context before the user's module: it hardens the
 * global object and builds `ctx`, `console` and `crypto`. It is a string because it executes in
 * the isolate, not in Node; host-bridge.ts compiles it once per isolate and runs it per context.
 *
 * Invariants the source keeps:
 * - The host handles it receives (`send`, `log`, `entropy`: synchronous isolated-vm Callbacks
 *   taking and returning primitives only) stay in this closure; user code can reach none of them, and no
 *   `Reference` or `ExternalCopy` exists inside the isolate at all.
 * - Intrinsics it relies on are captured before user code runs, and its bookkeeping lives in
 *   null-prototype objects, so code that patches `Array.prototype`, `JSON` or `Promise` can only
 *   confuse its own run, never the host: the host re-validates every message it receives.
 * - Host answers arrive as JSON text and are parsed here, so every value user code sees was made
 *   inside the isolate.
 *
 * The completion value is `bootstrap(send, log, entropy, boundsJson)`, which returns
 * `[run, deliver]` for the host to hold as References: `run(namespace, inputJson, executionId,
 * sessionId, node)` settles with `[kind, route|code|call, output|message, logsDropped]`, and
 * `deliver(call, ok, json)` answers one host call.
 */
export const ISOLATE_SOURCE = String.raw`(function bootstrap(send, log, entropy, boundsJson) {
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
  const ErrorCtor = Error;
  const ReferenceErrorCtor = ReferenceError;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const Uint8ArrayCtor = Uint8Array;
  const stringSlice = String.prototype.slice;
  const charCodeAt = String.prototype.charCodeAt;
  const numberToString = Number.prototype.toString;
  const WeakMapCtor = WeakMap;
  const weakGet = WeakMap.prototype.get;
  const weakSet = WeakMap.prototype.set;
  const weakHas = WeakMap.prototype.has;
  const typedArrayProto = getPrototypeOf(Uint8Array.prototype);
  const typedBuffer = getOwnPropertyDescriptor(typedArrayProto, 'buffer').get;
  const typedOffset = getOwnPropertyDescriptor(typedArrayProto, 'byteOffset').get;
  const typedLength = getOwnPropertyDescriptor(typedArrayProto, 'byteLength').get;
  const typedTag = getOwnPropertyDescriptor(typedArrayProto, Symbol.toStringTag).get;
  const bounds = jsonParse(boundsJson);

  // Nothing here may outlive a run or block: no WebAssembly (native code, unbounded compile),
  // no shared memory or Atomics.wait, and no finalizers (they would run during a later run
  // in this isolate, possibly another tenant's).
  const removed = ['WebAssembly', 'SharedArrayBuffer', 'Atomics', 'FinalizationRegistry', 'WeakRef'];
  for (let i = 0; i < removed.length; i++) delete G[removed[i]];

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

  // Errors made here are recorded, so an uncaught one reports its own code; user code cannot add
  // to this map.
  const known = new WeakMapCtor();
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
    apply(weakSet, known, [error, { code, message, call: 0 }]);
    return error;
  }

  function hostError(call, data) {
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
    apply(weakSet, known, [error, { code, message, call }]);
    return error;
  }

  function rejected(error) {
    return new PromiseCtor((resolve, reject) => reject(error));
  }

  // Host calls: at most maxCallsInFlight are with the host; the rest wait here, in memory that
  // counts against this isolate, not the host's.
  const pending = create(null);
  const queue = create(null);
  let nextCall = 0;
  let inFlight = 0;
  let head = 0;
  let tail = 0;

  function call(op, args) {
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
      pending[id] = { resolve, reject };
      if (inFlight < bounds.maxCallsInFlight) {
        inFlight++;
        send(id, op, json);
      } else {
        queue[tail++] = [id, op, json];
      }
    });
  }

  function deliver(id, ok, json) {
    const waiter = pending[id];
    if (waiter === undefined) return;
    delete pending[id];
    inFlight--;
    while (inFlight < bounds.maxCallsInFlight && head < tail) {
      const next = queue[head];
      delete queue[head++];
      inFlight++;
      send(next[0], next[1], next[2]);
    }
    if (ok) waiter.resolve(json === '' ? null : jsonParse(json));
    else waiter.reject(hostError(id, jsonParse(json)));
  }

  // Logging: bounded here so a loop of console.log cannot flood the host with messages.
  let logged = 0;
  let dropped = 0;
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
    if (logged >= bounds.maxLogEntries) {
      dropped++;
      return;
    }
    logged++;
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

  // Randomness comes from the host's CSPRNG, a block at a time, within a per-run budget.
  let block = '';
  let blockAt = 0;
  function randomByte() {
    if (blockAt >= block.length) {
      const next = entropy(256);
      if (typeof next !== 'string' || next.length === 0) {
        throw localError('call_refused', 'This run has drawn its ' + bounds.maxRandomBytes + ' random bytes.');
      }
      block = next;
      blockAt = 0;
    }
    return apply(charCodeAt, block, [blockAt++]);
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

  // One run per context: run() is called once, with the module namespace.
  const routes = new WeakMapCtor();
  let routeCalls = 0;

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

  function failure(error) {
    if (error !== null && (typeof error === 'object' || typeof error === 'function') && apply(weakHas, known, [error])) {
      const record = apply(weakGet, known, [error]);
      if (record.call > 0) return ['host_error', '' + record.call, '', dropped];
      return ['error', record.code, record.message, dropped];
    }
    return ['error', 'code_error', describe(error), dropped];
  }

  function makeCtx(ids) {
    return freeze({
      ids: freeze({ executionId: ids.executionId, sessionId: ids.sessionId, node: ids.node }),
      objects: freeze({
        get: (alias) => call('objects.get', [alias]),
        put: (alias, value) => call('objects.put', [alias, value]),
        list: (options) => call('objects.list', [options === undefined ? null : options]),
      }),
      thread: freeze({ post: (item) => call('thread.post', [item]) }),
      graph: freeze({
        mutate: (mutations) => call('graph.mutate', [mutations]),
        query: (query) => call('graph.query', [query]),
      }),
      log: ctxLog,
      route(name, output) {
        if (typeof name !== 'string' || name.length === 0) throw new TypeErrorCtor('ctx.route takes a route name.');
        routeCalls++;
        const marker = freeze(create(null));
        apply(weakSet, routes, [marker, { name, output }]);
        return marker;
      },
      LimitExceeded,
    });
  }

  async function run(namespace, inputJson, executionId, sessionId, node) {
    let fn;
    try {
      fn = namespace.default;
    } catch (error) {
      if (error instanceof ReferenceErrorCtor) {
        return ['error', 'code_error', 'The module did not finish loading: a top-level await never settled.', dropped];
      }
      return failure(error);
    }
    if (typeof fn !== 'function') return ['error', 'code_error', 'The module has no default export function.', dropped];
    let value;
    try {
      value = await fn(jsonParse(inputJson), makeCtx({ executionId, sessionId, node }));
    } catch (error) {
      return failure(error);
    }
    let route = '';
    if (value !== null && typeof value === 'object' && apply(weakHas, routes, [value])) {
      const chosen = apply(weakGet, routes, [value]);
      route = chosen.name;
      value = chosen.output;
    } else if (routeCalls > 0) {
      return ['error', 'output_invalid', 'ctx.route() was called but its result was not returned; return ctx.route(name, output) to take a route.', dropped];
    }
    const json = serialize(value);
    if (typeof json !== 'string') return ['error', 'output_invalid', json.invalid, dropped];
    return [route === '' ? 'output' : 'route', route, json, dropped];
  }

  return [run, deliver];
})`;
