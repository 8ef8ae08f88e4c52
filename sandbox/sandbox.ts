/**
 * Runs one `logic.code` node: leases an isolate, takes its tenant's context (isolate-pool.ts),
 * opens a run in it, compiles the code as an ES module, links its granted imports, calls its
 * default export with `(input, ctx)` and copies the result out as JSON. The run is bounded by
 * `timeoutMs` of wall-clock time whatever the code does (sync loops, awaits that never settle,
 * microtask storms): isolated-vm's `timeout` stops synchronous stretches, and a host-side watchdog
 * stops everything else by disposing the isolate at the deadline. It never throws: every way a
 * run can end is a `CodeResult`.
 *
 * Thread hops: everything that runs only our code (opening the run, compiling, linking, reading
 * the result) is a synchronous call on the calling thread, a few microseconds each. The code
 * itself always runs as an asynchronous task on the isolate's own thread, never synchronously
 * here: an allocation bomb that outruns the memory bound parks the thread that runs it for good
 * (docs/sandbox.md), and that must not be the runner's. One such task runs the module's top level,
 * the default export and the microtasks after it (the driver module, host-bridge.ts); only a run
 * still awaiting host calls when it ends needs a second hop, to wait for its promise.
 */
import type ivm from 'isolated-vm';
import { jsonProblem, storableCopy } from '../shared/json-guard.ts';
import { HostBridge, linkDriver, parseJson, truncateChars, type HostApi, type PreparedContext } from './host-bridge.ts';
import type { IsolateLease, IsolatePool } from './isolate-pool.ts';
import type { CodeError, CodeRequest, CodeResult, JsonValue, RunStats } from './messages.ts';
import { linkModule, refusedImport } from './modules.ts';

/** How often the watchdog looks for an isolate that isolated-vm disposed at its memory bound. */
const POLL_MS = 25;
/** Codes the isolate may end a run with by itself; anything else it claims is `code_error`. */
const ISOLATE_CODES = new Set([
  'code_error',
  'output_invalid',
  'invalid_request_body',
  'payload_too_large',
  'call_refused',
]);
/**
 * Sources up to this size compile on the calling thread, saving a thread hop per run (compiling
 * runs no user code); larger ones compile on the isolate's thread.
 */
const SYNC_COMPILE_CHARS = 64 * 1024;
/** Longest route name accepted from the code. */
const MAX_ROUTE_CHARS = 128;
/**
 * A run cap's refusal as a failed task reports it (a cap refused at the module's top level): the
 * isolate is not entered again after such a task, so the cap's own record cannot be read. Code can
 * throw the same text itself; that only puts its own organization on probation.
 */
const RUN_CAP_REFUSAL =
  /^RangeError: .* would take this run past its .*\((maxOutsideHeapBytes|maxIntlObjects|maxSegmentedChars|maxSourceChars|maxPropertyEscapes)\)/;

/**
 * Why a run was stopped. `failed`: a task of the code failed after our own code handed it over (a
 * top-level throw or an unhandled rejection while the module ran, or while an answer was
 * delivered); it ends as `code_error` with `message`, and its isolate is disposed, because
 * isolated-vm copied the thrown value out after the task's microtask checkpoint, running the
 * code's getters, and what they queued would run in the next synchronous call into the isolate:
 * on this thread, without a deadline, or in the next run.
 */
type Stop = { reason: 'timeout' | 'memory' | 'shutdown' | 'aborted' | 'stuck' } | { reason: 'failed'; message: string };
/** How a code run ended: with its result, or stopped (why: `Stop`). */
type CodeRunOutcome = { result: CodeResult } | Stop;

/**
 * Runs `request.code` against `host` in an isolate of `pool`. Resolves with the output, the
 * route taken, or the error the node fails with. Aborting `signal` stops the run at once (its
 * execution was cancelled or its lease lost): a run still waiting for an isolate leaves the queue,
 * a running one has its isolate disposed, and it resolves with `code_aborted`.
 */
export async function runCode(
  pool: IsolatePool,
  request: CodeRequest,
  host: HostApi,
  signal?: AbortSignal,
  onStart?: () => void,
): Promise<CodeResult> {
  const stats: RunStats = { wallMs: 0, cpuMs: null, hostCalls: 0, logs: 0, logsDropped: 0 };
  if (signal?.aborted) return abortedResult(stats);
  let lease: IsolateLease;
  try {
    lease = await pool.acquire(request.tenant, signal);
  } catch {
    if (signal?.aborted) return abortedResult(stats);
    return { kind: 'error', error: { code: 'internal_error', message: 'The sandbox is shut down.' }, stats };
  }
  // `onStart`: the run has its isolate (a sandbox process being retired hands back the runs that do not).
  onStart?.();
  return new CodeRun(pool, lease, request, host, stats, signal).execute();
}

function abortedResult(stats: RunStats): CodeResult {
  return {
    kind: 'error',
    error: { code: 'code_aborted', message: 'The run was stopped: its execution was cancelled or left this runner.' },
    stats,
  };
}

class CodeRun {
  readonly #pool: IsolatePool;
  readonly #lease: IsolateLease;
  readonly #request: CodeRequest;
  readonly #host: HostApi;
  readonly #stats: RunStats;
  readonly #started = performance.now();
  readonly #deadline: number;
  readonly #handles: Array<{ release(): void }> = [];
  readonly #signal: AbortSignal | undefined;
  #stop: (stop: Stop) => void = () => {};
  /** Set once the default export is awaiting: from then on the run can only move on through host answers. */
  #awaiting = false;
  /** The host holds a promise of the run's result (`wait`); a run stopped after this retires its isolate, which releases it. */
  #waitStarted = false;
  #bridge: HostBridge | null = null;
  #prepared: PreparedContext | null = null;
  /** A run cap refused the run something (an allocation outside the heap, an Intl object, source): probation, as for its memory bound. */
  #capped = false;

  constructor(
    pool: IsolatePool,
    lease: IsolateLease,
    request: CodeRequest,
    host: HostApi,
    stats: RunStats,
    signal?: AbortSignal,
  ) {
    this.#pool = pool;
    this.#signal = signal;
    this.#lease = lease;
    this.#request = request;
    this.#host = host;
    this.#stats = stats;
    const timeoutMs = Number.isFinite(request.timeoutMs) && request.timeoutMs > 0 ? request.timeoutMs : 1;
    this.#deadline = this.#started + timeoutMs;
  }

  async execute(): Promise<CodeResult> {
    const { isolate } = this.#lease;
    const cpuBefore = readCpu(isolate);
    const stopped = new Promise<Stop>((resolve) => {
      this.#stop = resolve;
    });
    const timer = setTimeout(() => this.#stop({ reason: 'timeout' }), this.#deadline - performance.now());
    const poll = setInterval(() => {
      if (isolate.isDisposed) this.#stop(this.#stopOfDisposed());
    }, POLL_MS);
    this.#lease.onCatastrophe = (message) => this.#stop({ reason: /memory/i.test(message) ? 'memory' : 'timeout' });
    const onAbort = () => this.#stop({ reason: 'aborted' });
    this.#signal?.addEventListener('abort', onAbort, { once: true });

    const work = this.#work();
    const outcome: CodeRunOutcome = await Promise.race([work, stopped]);
    clearTimeout(timer);
    clearInterval(poll);
    this.#signal?.removeEventListener('abort', onAbort);

    // A stuck run's isolate is idle and its context can be reused by the next run of the tenant:
    // `begin` resets every per-run state, and its unsettled promise is garbage.
    const quietStop = 'reason' in outcome && outcome.reason === 'stuck' && !this.#waitStarted;
    const healthy = ('result' in outcome || quietStop) && !isolate.isDisposed && this.#lease.catastrophe === null;
    if (!healthy) {
      // Stop the isolate before anything else so it cannot run on past its deadline.
      this.#lease.dispose('stopped');
      this.#pool.watchStopped(work, this.#request.tenant);
    }
    const settled = (await this.#bridge?.close(this.#pool.hostSettleMs)) ?? true;
    if (healthy && !settled) {
      this.#lease.dispose('stopped');
      this.#pool.watchStopped(work, this.#request.tenant);
    }
    const cpuAfter = readCpu(isolate);
    for (const handle of this.#handles.reverse()) {
      try {
        handle.release();
      } catch {
        // Released with its isolate.
      }
    }
    // A context goes back to its tenant's cache only after a run that ended by itself and left
    // nothing running; a stopped isolate is disposed with all its contexts.
    if (this.#prepared) {
      if (healthy && settled) this.#lease.returnContext(this.#prepared);
      else this.#prepared.release();
    }
    this.#stats.wallMs = performance.now() - this.#started;
    this.#stats.cpuMs = cpuBefore !== null && cpuAfter !== null ? Number(cpuAfter - cpuBefore) / 1e6 : null;
    if (this.#bridge) {
      this.#stats.hostCalls = this.#bridge.hostCalls;
      this.#stats.logs = this.#bridge.logs;
      this.#stats.logsDropped = this.#bridge.logsDropped;
    }
    // Probation (isolate-pool.ts) counts what the code did: a run stopped at its deadline or memory
    // bound, or refused by a run cap (memory outside the heap: the same offence, caught earlier,
    // whether or not the code caught the RangeError, in the default export or at top level),
    // distrusts its tenant; one aborted by its
    // runner or the pool, or stuck, says nothing. A failed task is code that ended by itself (a
    // thrown error), as far as probation goes.
    const capped =
      this.#capped || ('reason' in outcome && outcome.reason === 'failed' && RUN_CAP_REFUSAL.test(outcome.message));
    const verdict = capped
      ? 'distrust'
      : (healthy && settled) || ('reason' in outcome && outcome.reason === 'failed')
        ? 'trust'
        : 'reason' in outcome && (outcome.reason === 'timeout' || outcome.reason === 'memory')
          ? 'distrust'
          : 'neutral';
    this.#pool.release(this.#lease, healthy && settled, verdict);
    if ('result' in outcome) return { ...outcome.result, stats: this.#stats };
    return this.#stopped(outcome);
  }

  async #work(): Promise<CodeRunOutcome> {
    const { isolate } = this.#lease;
    const request = this.#request;
    try {
      const prepared = this.#lease.takeContext(request.tenant);
      this.#prepared = prepared;
      this.#bridge = new HostBridge({
        port: prepared.port,
        deliver: prepared.deliver,
        host: this.#host,
        bounds: this.#pool.bounds,
        deadline: this.#deadline,
        // A delivery's task failed: an unhandled rejection (a call that failed before the code
        // awaited it), or the deadline.
        onFault: (error) =>
          this.#stop(this.#stopOfError(error) ?? { reason: 'failed', message: describeHostError(error) }),
        onQuiet: () => this.#checkStuck(),
      });
      const ids = request.ids;
      // Before the code's top level runs: it may log or draw random bytes already.
      prepared.begin.applySync(
        undefined,
        [JSON.stringify(request.input ?? null), ids.executionId, ids.sessionId, ids.node],
        { timeout: this.#remaining() },
      );

      let module: ivm.Module;
      try {
        const options = { filename: 'logic.code' };
        module =
          request.code.length <= SYNC_COMPILE_CHARS
            ? isolate.compileModuleSync(request.code, options)
            : await isolate.compileModule(request.code, options);
      } catch (error) {
        return this.#stopOfError(error) ?? this.#error('code_error', describeHostError(error));
      }
      this.#handles.push(module);

      const refused = refusedImport(module.dependencySpecifiers, request.imports, this.#pool.vetted);
      if (refused !== null) return this.#error('import_refused', refused);
      let driver: ivm.Module;
      try {
        this.#handles.push(...linkModule(isolate, prepared.context, module, request.imports, this.#pool.vetted));
        driver = linkDriver(isolate, prepared, module);
      } catch (error) {
        if (hasCode(error, 'import_refused')) return this.#error('import_refused', (error as Error).message);
        return this.#stopOfError(error) ?? this.#error('code_error', describeHostError(error));
      }
      this.#handles.push(driver);

      try {
        await driver.evaluate({ timeout: this.#remaining() });
      } catch (error) {
        // The module threw at top level, or a promise was rejected with no handler while the
        // task ran, at top level or in the default export (isolated-vm fails the task).
        return this.#stopOfError(error) ?? { reason: 'failed', message: describeHostError(error) };
      }

      // On this thread, unless an answer was delivered since the module's task and may have
      // failed (Stop 'failed'): then on the isolate's, where leftovers of the code run under the
      // deadline.
      const options = { timeout: this.#remaining(), result: { copy: true } } as const;
      let tuple: unknown = this.#bridge.clean
        ? prepared.result.applySync(undefined, [], options)
        : await prepared.result.apply(undefined, [], options);
      if (tuple === 'unstarted') {
        return this.#error('code_error', 'The module did not finish loading: a top-level await never settled.');
      }
      if (tuple === 'pending') {
        // Nothing in the isolate can run by itself (no timers, microtasks drained): with no host
        // call in flight, the promise the export returned can never settle.
        this.#awaiting = true;
        if (this.#bridge?.quiet) return { reason: 'stuck' };
        this.#waitStarted = true;
        try {
          tuple = await prepared.wait.apply(undefined, [], {
            timeout: this.#remaining(),
            result: { promise: true, copy: true },
          });
        } catch (error) {
          return this.#stopOfError(error) ?? this.#error('internal_error', 'The sandbox failed to run the code.');
        }
      }
      return { result: this.#resultOf(tuple) };
    } catch (error) {
      return this.#stopOfError(error) ?? this.#error('internal_error', 'The sandbox failed to prepare the run.');
    }
  }

  /**
   * Called when the last host call in flight was answered and its answer delivered: if the run is
   * still pending then, nothing can ever resume it, so it stops now instead of holding its isolate
   * until `workflow.code_run_seconds`. The answer's delivery ran the code up to its next await and
   * drained the microtasks; a new ctx call would have registered synchronously (not quiet).
   */
  #checkStuck(): void {
    if (!this.#awaiting || !this.#prepared || this.#lease.isolate.isDisposed) return;
    let tuple: unknown;
    try {
      tuple = this.#prepared.result.applySync(undefined, [], { timeout: this.#remaining(), result: { copy: true } });
    } catch {
      return;
    }
    if (tuple === 'pending') this.#stop({ reason: 'stuck' });
  }

  /** Milliseconds left, at least 1 (isolated-vm reads 0 as "no timeout"). */
  #remaining(): number {
    return Math.max(1, Math.ceil(this.#deadline - performance.now()));
  }

  /** Reads the driver's `[kind, route|code|call, output|message, logsDropped, outsideBytes, capped]`, trusting nothing. */
  #resultOf(tuple: unknown): CodeResult {
    const stats = this.#stats;
    const malformed: CodeResult = {
      kind: 'error',
      error: { code: 'internal_error', message: 'The sandbox returned a malformed result.' },
      stats,
    };
    if (!Array.isArray(tuple) || tuple.length !== 6 || tuple.slice(0, 3).some((part) => typeof part !== 'string'))
      return malformed;
    const [kind, second, third, dropped, outside, capped] = tuple as [
      string,
      string,
      string,
      unknown,
      unknown,
      unknown,
    ];
    if (capped === 1) this.#capped = true;
    if (typeof dropped === 'number') this.#bridge?.addDroppedLogs(dropped);
    if (typeof outside === 'number' && outside > 0 && Number.isFinite(outside)) this.#lease.outsideBytes += outside;
    const { bounds } = this.#pool;
    switch (kind) {
      case 'output':
      case 'route': {
        if (kind === 'route' && (second.length === 0 || second.length > MAX_ROUTE_CHARS)) {
          return {
            kind: 'error',
            error: { code: 'output_invalid', message: `A route name has 1 to ${MAX_ROUTE_CHARS} characters.` },
            stats,
          };
        }
        if (Buffer.byteLength(third) > bounds.maxOutputBytes) {
          return {
            kind: 'error',
            error: { code: 'output_invalid', message: `The output is larger than ${bounds.maxOutputBytes} bytes.` },
            stats,
          };
        }
        let output: JsonValue;
        try {
          output = parseJson(third) as JsonValue;
        } catch {
          return malformed;
        }
        // What would fail to store (U+0000, an unpaired surrogate) or nest past the API's depth
        // fails the run here, with its path, not the runner's write of it later.
        const problem = jsonProblem(output);
        if (problem !== null)
          return {
            kind: 'error',
            error: { code: 'output_invalid', message: `The output cannot be stored: ${problem}.` },
            stats,
          };
        return kind === 'route' ? { kind, route: second, output, stats } : { kind, output, stats };
      }
      case 'error': {
        const code = ISOLATE_CODES.has(second) ? second : 'code_error';
        return {
          kind: 'error',
          error: { code, message: storableCopy(truncateChars(third, bounds.maxMessageChars)) },
          stats,
        };
      }
      case 'host_error': {
        const error = this.#bridge?.failureOf(Number(second));
        return error ? { kind: 'error', error, stats } : malformed;
      }
      default:
        return malformed;
    }
  }

  #error(code: string, message: string): CodeRunOutcome {
    const error: CodeError = { code, message: truncateChars(message, this.#pool.bounds.maxMessageChars) };
    return { result: { kind: 'error', error, stats: this.#stats } };
  }

  /** Why the isolate stopped, when `error` says it was stopped rather than the code failing. */
  #stopOfError(error: unknown): Stop | null {
    const { isolate } = this.#lease;
    const message = error instanceof Error ? error.message : '';
    if (this.#lease.disposedBy === 'pool') return { reason: 'shutdown' };
    if (isolate.isDisposed) return this.#stopOfDisposed();
    // Compare with the clock too: code could throw an Error with this message itself.
    if (message === 'Script execution timed out.' && performance.now() >= this.#deadline - 50)
      return { reason: 'timeout' };
    return null;
  }

  #stopOfDisposed(): Stop {
    const cause = this.#lease.disposedBy;
    return { reason: cause === 'pool' ? 'shutdown' : cause === 'stopped' ? 'timeout' : 'memory' };
  }

  #stopped(stop: Stop): CodeResult {
    const stats = this.#stats;
    const reason = stop.reason;
    if (stop.reason === 'failed') {
      return {
        kind: 'error',
        error: { code: 'code_error', message: truncateChars(stop.message, this.#pool.bounds.maxMessageChars) },
        stats,
      };
    }
    if (reason === 'timeout') {
      const seconds = this.#request.timeoutMs / 1000;
      return {
        kind: 'error',
        error: {
          code: 'code_timeout',
          message: `The code ran longer than workflow.code_run_seconds (${seconds} s) and was stopped.`,
          limit: { id: 'workflow.code_run_seconds', value: seconds },
        },
        stats,
      };
    }
    if (reason === 'memory') {
      return {
        kind: 'error',
        error: {
          code: 'code_memory',
          message: `The code used more than the sandbox memory bound (${this.#pool.memoryMb} MiB) and was stopped.`,
        },
        stats,
      };
    }
    if (reason === 'stuck') {
      return {
        kind: 'error',
        error: {
          code: 'code_error',
          message:
            'The code can never finish: it awaits a promise that nothing will settle (no ctx call is in flight, and the sandbox has no timers).',
        },
        stats,
      };
    }
    if (reason === 'aborted') return abortedResult(stats);
    return {
      kind: 'error',
      error: { code: 'internal_error', message: 'The sandbox was shut down during the run.' },
      stats,
    };
  }
}

function readCpu(isolate: ivm.Isolate): bigint | null {
  try {
    return isolate.cpuTime;
  } catch {
    return null;
  }
}

function hasCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/**
 * The message of an error isolated-vm raised on the host for the code (syntax errors, top-level
 * throws). Only `name` and `message` are kept: the host-side stack names host files.
 */
function describeHostError(error: unknown): string {
  if (error instanceof Error) {
    const name = typeof error.name === 'string' && error.name !== '' ? error.name : 'Error';
    return `${name}: ${String(error.message)}`;
  }
  try {
    return `Uncaught ${String(error)}`;
  } catch {
    return 'An uncaught value was thrown.';
  }
}
