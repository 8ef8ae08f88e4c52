/**
 * The host side of `ctx`: how a new context is wired to the host (bootstrap, lockdown, the
 * runtime module and each run's driver), and how a run's ctx calls, logs and random draws are
 * served. The isolate side is sandbox/isolate-source.ts.
 *
 * Messages are plain text both ways: the isolate calls `send(call, op, json)` (an isolated-vm
 * Callback, arguments copied), the host answers with
 * `deliver(call, ok, json)` through a Reference to an isolate function. So no host object,
 * function or Reference is ever inside the isolate, and every value the host takes from it is
 * parsed and re-validated here.
 */
import { randomBytes } from 'node:crypto';
import ivm from 'isolated-vm';
import { jsonProblem, storableCopy } from '../shared/json-guard.ts';
import { BOOT_GLOBAL, bootScript } from './context-snapshot.ts';
import { hostRefusal, logLevels, type CodeError, type LogLevel, type SandboxBounds } from './messages.ts';

/**
 * What a run's code may do to the world, supplied by the runner per run. Each method receives
 * arguments already parsed from JSON and must validate them as the REST command would; a
 * `ServiceError` it throws reaches the code as an `Error` with the same `code` (and `limit`),
 * `limit_exceeded` as `LimitExceeded`. Any other throw reaches the code as `internal_error`
 * without details, and is passed to `reportError`.
 */
export interface HostApi {
  readonly objects: {
    get(alias: string): Promise<unknown>;
    put(alias: string, value: unknown): Promise<unknown>;
    list(options: unknown): Promise<unknown>;
  };
  readonly thread: { post(item: unknown): Promise<unknown> };
  readonly graph: {
    mutate(mutations: unknown): Promise<unknown>;
    query(query: unknown): Promise<unknown>;
  };
  /**
   * `ctx.fetch(url, init)`: one outside call under the runner's egress policy, answered as
   * `{status, statusText, headers, body, url, redirected}` (body as UTF-8 text).
   */
  fetch(url: unknown, init: unknown): Promise<unknown>;
  /** `ctx.credentials.get(name)`: the secret of a credential visible to the run's session. */
  readonly credentials: { get(name: unknown): Promise<unknown> };
  /** Receives `ctx.log` and `console` output, already bounded and truncated. */
  log(level: LogLevel, message: string): void;
  /** Receives host failures that were hidden from the code as `internal_error`. */
  reportError?(error: unknown): void;
}

type Operation = {
  /** Returns a message when the arguments have the wrong shape. */
  check(args: unknown[]): string | null;
  call(host: HostApi, args: unknown[]): Promise<unknown>;
};

const operations: Record<string, Operation> = {
  'objects.get': {
    check: (a) => (a.length === 1 && typeof a[0] === 'string' ? null : 'ctx.objects.get takes an alias string.'),
    call: (h, a) => h.objects.get(a[0] as string),
  },
  'objects.put': {
    check: (a) =>
      a.length === 2 && typeof a[0] === 'string' ? null : 'ctx.objects.put takes an alias string and a value.',
    call: (h, a) => h.objects.put(a[0] as string, a[1]),
  },
  'objects.list': {
    check: (a) => (a.length === 1 ? null : 'ctx.objects.list takes one options object.'),
    call: (h, a) => h.objects.list(a[0]),
  },
  'thread.post': {
    check: (a) => (a.length === 1 ? null : 'ctx.thread.post takes one item.'),
    call: (h, a) => h.thread.post(a[0]),
  },
  'graph.mutate': {
    check: (a) => (a.length === 1 ? null : 'ctx.graph.mutate takes one list of mutations.'),
    call: (h, a) => h.graph.mutate(a[0]),
  },
  'graph.query': {
    check: (a) => (a.length === 1 ? null : 'ctx.graph.query takes one query.'),
    call: (h, a) => h.graph.query(a[0]),
  },
  fetch: {
    check: (a) =>
      a.length === 2 && typeof a[0] === 'string' ? null : 'ctx.fetch takes a URL string and an optional init object.',
    call: (h, a) => h.fetch(a[0], a[1]),
  },
  'credentials.get': {
    check: (a) => (a.length === 1 && typeof a[0] === 'string' ? null : 'ctx.credentials.get takes a name string.'),
    call: (h, a) => h.credentials.get(a[0]),
  },
};

/**
 * The host end of one context's callbacks. A context serves one run at a time, so the callbacks
 * reach that run through this slot: `HostBridge` attaches itself for its run and detaches when the
 * run is over; before, between and after runs everything the isolate sends is dropped.
 */
class BridgePort {
  bridge: HostBridge | null = null;

  onSend(call: unknown, op: unknown, json: unknown): void {
    this.bridge?.receive(call, op, json);
  }

  onLog(level: unknown, text: unknown): void {
    this.bridge?.log(level, text);
  }

  onEntropy(size: unknown): string {
    return this.bridge?.entropy(size) ?? '';
  }
}

/**
 * A context with the bootstrap run and the realm locked down in it, ready for runs of one tenant
 * (isolate-source.ts describes the References).
 */
export interface PreparedContext {
  readonly context: ivm.Context;
  /** `begin(inputJson, executionId, sessionId, node)`: opens a run, resetting all per-run state. */
  readonly begin: ivm.Reference;
  /** `result()`: the run's tuple, or 'pending' / 'unstarted'. */
  readonly result: ivm.Reference;
  /** `wait()`: a promise of the run's tuple. */
  readonly wait: ivm.Reference;
  /** `deliver(call, ok, json)`: answers one host call. */
  readonly deliver: ivm.Reference;
  /** `sandbox:runtime`, the module through which a run's driver reaches `start`. */
  readonly runtime: ivm.Module;
  readonly port: BridgePort;
  /** Whose runs this context serves (a tenant, or the key of a shared context), fixed by its first run; null: used once. */
  tenant: string | null;
  /** Frees the context and the references into it; safe on a disposed isolate. */
  release(): void;
}

/**
 * The module through which a run's driver calls the bootstrap's `start`. It is linked only into
 * drivers: a `sandbox:` specifier in the code is refused like any URL (modules.ts).
 */
const RUNTIME_SOURCE =
  'let start = null;\nexport function install(fn) { if (start === null) start = fn; }\nexport function run(namespace) { start(namespace); }\n';
const RUNTIME_SPECIFIER = 'sandbox:runtime';
/**
 * The module a run evaluates: importing the code's module evaluates it first, then the driver
 * hands its namespace to `start`. So one asynchronous task on the isolate runs the code's top
 * level, its default export and every microtask that follows, instead of one task each.
 */
const DRIVER_SOURCE = "import * as code from 'sandbox:code';\nimport { run } from 'sandbox:runtime';\nrun(code);\n";
const CODE_SPECIFIER = 'sandbox:code';

/** What `prepareContext` needs of its isolate. */
export interface ContextRecipe {
  /** The bootstrap to run in each context; null when the isolate was made from the context snapshot. */
  bootstrap: ivm.Script | null;
  bounds: SandboxBounds;
}

/** `fromSnapshot`: the isolate was made with `contextSnapshot()`, so its contexts come bootstrapped. */
export function contextRecipe(isolate: ivm.Isolate, bounds: SandboxBounds, fromSnapshot: boolean): ContextRecipe {
  return {
    bootstrap: fromSnapshot ? null : isolate.compileScriptSync(bootScript([]), { filename: 'sandbox:bootstrap' }),
    bounds,
  };
}

/**
 * Creates a context (from the snapshot, bootstrapped and mostly frozen, or bootstrapped here),
 * hands it the host's callbacks and finishes its lockdown, and wires the runtime module.
 * Synchronous: it runs only our own code, on an idle isolate. ≈ 0.5 ms of CPU from the snapshot
 * (bench/sandbox.ts), which is still more than a warm run, so contexts are kept per tenant.
 */
export function prepareContext(isolate: ivm.Isolate, recipe: ContextRecipe): PreparedContext {
  const port = new BridgePort();
  const context = isolate.createContextSync();
  const handles: Array<{ release(): void }> = [context];
  const temporary: Array<{ release(): void }> = [];
  try {
    recipe.bootstrap?.runSync(context, { timeout: 1000 });
    const api = context.global.getSync(BOOT_GLOBAL, { reference: true }) as ivm.Reference;
    temporary.push(api);
    const wire = api.getSync(5, { reference: true }) as ivm.Reference;
    temporary.push(wire);
    wire.applySync(
      undefined,
      [
        // Synchronous: the isolate waits until the host has registered the call or log, so nothing
        // it sent can arrive after its result (a lost log, a call the host never saw).
        new ivm.Callback((call: unknown, op: unknown, json: unknown) => port.onSend(call, op, json)),
        new ivm.Callback((level: unknown, text: unknown) => port.onLog(level, text)),
        new ivm.Callback((size: unknown) => port.onEntropy(size)),
        JSON.stringify(recipe.bounds),
        BOOT_GLOBAL,
      ],
      { timeout: 1000 },
    );
    const [begin, start, result, wait, deliver] = [0, 1, 2, 3, 4].map((index) => {
      const handle = api.getSync(index, { reference: true }) as ivm.Reference;
      handles.push(handle);
      return handle;
    }) as [ivm.Reference, ivm.Reference, ivm.Reference, ivm.Reference, ivm.Reference];
    const runtime = isolate.compileModuleSync(RUNTIME_SOURCE, { filename: RUNTIME_SPECIFIER });
    handles.push(runtime);
    runtime.instantiateSync(context, () => {
      throw new Error('sandbox:runtime imports nothing.');
    });
    runtime.evaluateSync({ timeout: 1000 });
    const install = runtime.namespace.getSync('install', { reference: true }) as ivm.Reference;
    temporary.push(install);
    install.applySync(undefined, [start.derefInto()], { timeout: 1000 });
    return {
      context,
      begin,
      result,
      wait,
      deliver,
      runtime,
      port,
      tenant: null,
      release() {
        port.bridge = null;
        for (const handle of handles.reverse()) releaseQuietly(handle);
      },
    };
  } catch (error) {
    for (const handle of handles.reverse()) releaseQuietly(handle);
    throw error;
  } finally {
    for (const handle of temporary) releaseQuietly(handle);
  }
}

function releaseQuietly(handle: { release(): void }): void {
  try {
    handle.release();
  } catch {
    // Already gone with a disposed isolate.
  }
}

/**
 * Compiles and links the driver of one run: `code` must be instantiated in `prepared.context`
 * already. Synchronous; runs nothing. The caller evaluates the driver and releases it.
 */
export function linkDriver(isolate: ivm.Isolate, prepared: PreparedContext, code: ivm.Module): ivm.Module {
  const driver = isolate.compileModuleSync(DRIVER_SOURCE, { filename: 'sandbox:driver' });
  try {
    driver.instantiateSync(prepared.context, (specifier) => {
      if (specifier === CODE_SPECIFIER) return code;
      if (specifier === RUNTIME_SPECIFIER) return prepared.runtime;
      throw new Error(`The driver imports ${specifier}.`);
    });
  } catch (error) {
    driver.release();
    throw error;
  }
  return driver;
}

/** Host-side view of an error thrown by a HostApi method, as the code will see it. */
function toCodeError(error: unknown, maxMessageChars: number): CodeError | null {
  const refusal = hostRefusal(error);
  return refusal && { ...refusal, message: truncateChars(refusal.message, maxMessageChars) };
}

export interface HostBridgeOptions {
  port: BridgePort;
  deliver: ivm.Reference;
  host: HostApi;
  bounds: SandboxBounds;
  /** `performance.now()` value at which the run stops; deliveries are bounded by it. */
  deadline: number;
  /** Called when answering the isolate failed (it timed out or was disposed meanwhile). */
  onFault(error: unknown): void;
  /** Called when the last host call in flight has been answered and the answer delivered. */
  onQuiet?(): void;
}

/** Serves the ctx calls, logs and random draws of one run. */
export class HostBridge {
  readonly #o: HostBridgeOptions;
  #open = true;
  #calls = 0;
  #inFlight = 0;
  #logs = 0;
  #logsDropped = 0;
  #random = 0;
  readonly #pending = new Set<Promise<void>>();
  readonly #deliveries = new Set<Promise<void>>();
  #faulted = false;
  readonly #failures = new Map<number, CodeError>();

  constructor(options: HostBridgeOptions) {
    this.#o = options;
    options.port.bridge = this;
  }

  get hostCalls(): number {
    return this.#calls;
  }

  get logs(): number {
    return this.#logs;
  }

  get logsDropped(): number {
    return this.#logsDropped;
  }

  /** True when no host call is in progress and no answer is on its way into the isolate. */
  /**
   * No answer is on its way into the isolate and none failed there: no task of this run since the
   * last clean one can have left the code's microtasks queued (sandbox.ts, Stop 'failed').
   */
  get clean(): boolean {
    return !this.#faulted && this.#deliveries.size === 0;
  }

  get quiet(): boolean {
    return this.#inFlight === 0 && this.#deliveries.size === 0;
  }

  /** The error the host answered call `call` with, if it failed. */
  failureOf(call: number): CodeError | undefined {
    return this.#failures.get(call);
  }

  receive(call: unknown, op: unknown, json: unknown): void {
    if (!this.#open) return;
    // The bootstrap only ever sends this shape; anything else is not worth an answer.
    if (
      typeof call !== 'number' ||
      !Number.isSafeInteger(call) ||
      call <= 0 ||
      typeof op !== 'string' ||
      typeof json !== 'string'
    )
      return;
    const { bounds } = this.#o;
    if (++this.#calls > bounds.maxCalls) {
      this.#fail(call, { code: 'call_refused', message: `A run may make at most ${bounds.maxCalls} ctx calls.` });
      return;
    }
    // The isolate queues calls past maxCallsInFlight itself; this guards the host regardless.
    if (this.#inFlight >= bounds.maxCallsInFlight) {
      this.#fail(call, {
        code: 'call_refused',
        message: `At most ${bounds.maxCallsInFlight} ctx calls may wait for the host at once.`,
      });
      return;
    }
    if (Buffer.byteLength(json) > bounds.maxCallBytes) {
      this.#fail(call, {
        code: 'payload_too_large',
        message: `ctx.${op} arguments are larger than ${bounds.maxCallBytes} bytes.`,
      });
      return;
    }
    const operation = Object.hasOwn(operations, op) ? operations[op] : undefined;
    let args: unknown;
    try {
      args = parseJson(json);
    } catch {
      args = undefined;
    }
    // The same bounds as any JSON the API accepts (shared/json-guard.ts): text PostgreSQL can
    // store, at most 64 levels deep; the message names the argument's path.
    const unstorable = Array.isArray(args) ? jsonProblem(args) : null;
    const problem = !operation
      ? `ctx.${op} does not exist.`
      : !Array.isArray(args)
        ? 'The call arguments are not a list.'
        : unstorable !== null
          ? `ctx.${op} arguments ${unstorable}.`
          : operation.check(args);
    if (problem !== null || !operation || !Array.isArray(args)) {
      this.#fail(call, { code: 'invalid_request_body', message: problem ?? 'The call is malformed.' });
      return;
    }
    this.#inFlight++;
    const task = this.#serve(call, operation, args).finally(() => {
      this.#inFlight--;
      this.#pending.delete(task);
      this.#quieted();
    });
    this.#pending.add(task);
  }

  log(level: unknown, text: unknown): void {
    if (!this.#open || typeof text !== 'string' || !logLevels.includes(level as LogLevel)) return;
    if (this.#logs >= this.#o.bounds.maxLogEntries) {
      this.#logsDropped++;
      return;
    }
    this.#logs++;
    try {
      this.#o.host.log(level as LogLevel, storableCopy(truncateBytes(text, this.#o.bounds.maxLogEntryBytes)));
    } catch (error) {
      this.#o.host.reportError?.(error);
    }
  }

  /** Up to `size` (≤ 256) random bytes as a latin1 string; empty once the run's budget is spent. */
  entropy(size: unknown): string {
    if (!this.#open || typeof size !== 'number' || !Number.isInteger(size) || size <= 0) return '';
    const n = Math.min(size, 256, this.#o.bounds.maxRandomBytes - this.#random);
    if (n <= 0) return '';
    this.#random += n;
    return randomBytes(n).toString('latin1');
  }

  /** Counts isolate-side dropped logs (the isolate stops sending past the bound). */
  addDroppedLogs(count: number): void {
    if (Number.isSafeInteger(count) && count > 0) this.#logsDropped += count;
  }

  /**
   * Stops serving the isolate and waits (at most `graceMs`) for host calls already started, so
   * their effects have landed before the node is reported finished, awaited or not, and for
   * answers already on their way into the isolate. Calls still queued inside the isolate (past
   * maxCallsInFlight) never reach the host.
   *
   * Resolves false when the isolate may still be running this run's code: an answer delivered
   * just before the result can resume code that keeps going after the result is out. Such an
   * isolate must not serve another run (it would hold the isolate up to this run's deadline).
   */
  async close(graceMs: number): Promise<boolean> {
    this.#open = false;
    if (this.#o.port.bridge === this) this.#o.port.bridge = null;
    if (this.#pending.size > 0 || this.#deliveries.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.#pending, ...this.#deliveries]),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
    }
    return !this.#faulted && this.#deliveries.size === 0;
  }

  async #serve(call: number, operation: Operation, args: unknown[]): Promise<void> {
    let value: unknown;
    try {
      value = await operation.call(this.#o.host, args);
    } catch (error) {
      const known = toCodeError(error, this.#o.bounds.maxMessageChars);
      if (!known) this.#o.host.reportError?.(error);
      this.#fail(call, known ?? { code: 'internal_error', message: 'The host call failed.' });
      return;
    }
    let json: string | undefined;
    try {
      json = JSON.stringify(value ?? null);
    } catch (error) {
      this.#o.host.reportError?.(error);
    }
    if (json === undefined) this.#fail(call, { code: 'internal_error', message: 'The host call failed.' });
    else this.#answer(call, true, json);
  }

  #fail(call: number, error: CodeError): void {
    this.#failures.set(call, error);
    this.#answer(call, false, JSON.stringify(error));
  }

  #answer(call: number, ok: boolean, json: string): void {
    if (!this.#open) return;
    const remaining = Math.ceil(this.#o.deadline - performance.now());
    // Past the deadline the watchdog is already stopping the run.
    if (remaining <= 0) return;
    const delivery = this.#o.deliver
      .apply(undefined, [call, ok, json], { timeout: remaining })
      .then(
        () => {},
        (error: unknown) => {
          this.#faulted = true;
          if (this.#open) this.#o.onFault(error);
        },
      )
      .finally(() => {
        this.#deliveries.delete(delivery);
        this.#quieted();
      });
    this.#deliveries.add(delivery);
  }

  #quieted(): void {
    if (this.#open && !this.#faulted && this.quiet) this.#o.onQuiet?.();
  }
}

/** JSON.parse that drops `__proto__` keys, so parsed data is safe to merge anywhere. */
export function parseJson(json: string): unknown {
  return json.includes('"__proto__"')
    ? JSON.parse(json, (key, value: unknown) => (key === '__proto__' ? undefined : value))
    : JSON.parse(json);
}

export function truncateChars(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Cuts `text` to at most `max` UTF-8 bytes (plus an ellipsis) without splitting a character. */
function truncateBytes(text: string, max: number): string {
  if (text.length <= max / 3 || Buffer.byteLength(text) <= max) return text;
  let cut = Buffer.from(text, 'utf8').subarray(0, max).toString('utf8');
  if (cut.endsWith('\uFFFD')) cut = cut.slice(0, -1);
  return `${cut}…`;
}
