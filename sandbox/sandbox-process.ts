/**
 * The sandbox in a child process that can be thrown away (docs/sandbox.md, "Containment"). An
 * engine thread runs its `logic.code` through a `ProcessSandbox`: the isolates live in a child
 * process (sandbox/sandbox-child.ts) and every ctx call comes back here to the real HostApi.
 *
 * Why: some allocations run inside V8 builtins that isolated-vm cannot interrupt, and isolated-vm
 * then parks that isolate's thread for good, with the memory it took. In the runner's own process
 * that meant draining and killing the runner. Here only the child is lost: when it reports a lost
 * thread, new runs go to a new child as soon as it is ready (≈ 0.25 s to start; after the first
 * incident a spare is kept started for `SPARE_KEEP_MS`, so repeated attacks find one ready), the
 * lost child serving them on its healthy isolates until then; it then finishes the runs it has
 * (other organizations' runs complete) and is killed — at the latest after `RETIRE_GRACE_MS`. A
 * child that dies is replaced at once. The runner keeps its pid and its
 * executions. No spare is kept in quiet times: a child at rest takes ≈ 90 MiB.
 *
 * A run costs two messages more than in-process (≈ 25 µs of CPU across both processes at load,
 * docs/sandbox.md), a ctx call two more.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { HostApi } from './host-bridge.ts';
import { Backoff } from '../shared/backoff.ts';
import type { PoolStats } from './isolate-pool.ts';
import {
  ChildCgroup,
  defaultMemoryBoundMb,
  residentMb,
  SAMPLE_MS,
  watchdogPlan,
  type MemoryBoundPlan,
} from './memory-bound.ts';
import { hostRefusal, logLevels, type CodeRequest, type CodeResult, type LogLevel, type RunStats } from './messages.ts';
import {
  fromChild,
  Outbox,
  type CallRefusal,
  type ChildPoolOptions,
  type FromChild,
  type ToChild,
} from './sandbox-process-messages.ts';

const CHILD_ENTRY = fileURLToPath(new URL('./sandbox-child.ts', import.meta.url));
/** How long a retired child may finish its runs before it is killed with whatever it still runs. */
const RETIRE_GRACE_MS = 10_000;
/** Restart delays of children that die young: from the least, doubled per death up to the maximum. */
const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 10_000;
/** A child that lived this long before dying resets the backoff. */
const STABLE_AFTER_MS = 30_000;
/** After a child was lost, a started spare is kept this long (renewed by each further loss). */
const SPARE_KEEP_MS = 5 * 60_000;
/**
 * A ready child reports its stats every second from its main thread; one not heard from for this
 * long is stuck (something ran on its main thread without a deadline, or the process was stopped)
 * and is killed, which replaces it and gives its runs their one more try. Generous: a niced child
 * on a saturated host may go a few seconds without a turn.
 */
const UNRESPONSIVE_MS = 10_000;
/** How often the children's liveness is looked at. */
const LIVENESS_EVERY_MS = 1_000;
/**
 * A child not ready this long after it was started (its pool warms in ≈ 0.25 s) is killed and
 * replaced: runs sent to it would otherwise wait for it forever.
 */
const READY_WITHIN_MS = 60_000;
/** Signals a process raises on itself when it crashes: V8's fatal errors abort (SIGABRT). */
const CRASH_SIGNALS: ReadonlySet<NodeJS.Signals> = new Set([
  'SIGABRT',
  'SIGSEGV',
  'SIGBUS',
  'SIGILL',
  'SIGFPE',
  'SIGTRAP',
]);

/**
 * V8's heap growing factor in the sandbox process (1 + percent/100; V8 picks 1.1-2 by itself), for
 * every isolate there. A tenant the runner has not seen recently gets a new context and evicts the
 * least recently used one (≈ 0.25 MiB of old-space garbage each); with V8's own factor a full
 * collection came every few dozen new tenants and marked every kept context each time, which cost
 * as much CPU as making the contexts. With 4× growth a new tenant's run costs ≈ 1.2 ms of CPU
 * instead of ≈ 1.8 (a stream of new tenants on one isolate) and the runner ≈ 12 % less CPU per
 * execution over 1,000 organizations (docs/sandbox.md, "Many organizations"). Every heap stays
 * within its isolate's `memoryLimit`: V8 collects at the limit whatever the factor says.
 */
export const SANDBOX_V8_FLAGS: readonly string[] = ['--heap-growing-percent=300'];

export interface ProcessSandboxOptions {
  /** Isolate pool options of each child (size, memoryMb, …). */
  pool: ChildPoolOptions;
  /**
   * The nice value of every thread of each child (shared/priority.ts), so that code, which can
   * spin for its whole `workflow.code_run_seconds`, yields the CPU to the runner's own threads
   * (claims, leases, the interpreter) and to the API and database. Unset: inherited.
   */
  nice?: number;
  /** A child lost an isolate thread: the run of `tenant` (when known) caused it. The child is being replaced. */
  onDegraded?: (reason: string, tenant: string | undefined) => void;
  /**
   * Asked before a run is sent to a child (also when a retired child hands an unstarted run back):
   * a result ends the run at once without running it (a cooled-down organization's).
   */
  refuse?: (request: CodeRequest) => CodeResult | null;
  /** How long a ready child may go unheard before it is killed and replaced. Default UNRESPONSIVE_MS (10 s). */
  unresponsiveMs?: number;
  /**
   * How each child's memory is bounded (sandbox/memory-bound.ts; the runner decides it once).
   * Default: the watchdog at defaultMemoryBoundMb of the pool's isolates.
   */
  memory?: MemoryBoundPlan;
  /** Children started, retired and died, for the runner's log. */
  log?: (message: string, fields: Record<string, unknown>) => void;
}

export interface ProcessSandboxStats {
  /** The pool stats the serving child last reported (null before its first report). */
  pool: PoolStats | null;
  /** Children alive: serving, spare and retiring. */
  children: number;
  /** Children replaced because they lost an isolate thread or died. */
  replaced: number;
  /** Pids of the serving child and the spare (undefined when there is none). */
  servingPid: number | undefined;
  sparePid: number | undefined;
  /** Children killed past their memory bound (by the watchdog or the kernel in their cgroup). */
  memoryKills: number;
}

interface Run {
  /** The child running it (a run handed back by a retired child moves to the serving one). */
  child: Child;
  readonly request: CodeRequest;
  readonly host: HostApi;
  readonly resolve: (result: CodeResult) => void;
  readonly started: number;
  /** Sent again once already, after its child died under it. */
  retried: boolean;
  /** Its child said it has an isolate: its code may be running there. */
  running: boolean;
  /** Its child's resident memory (MiB, the watchdog's last sample) when it started running; null: not sampled. */
  startedMb: number | null;
}

const EMPTY_STATS: RunStats = { wallMs: 0, cpuMs: null, hostCalls: 0, logs: 0, logsDropped: 0 };

/** One child process and the runs it holds. */
class Child {
  readonly proc: ChildProcess;
  readonly runs = new Map<number, Run>();
  readonly outbox: Outbox<ToChild>;
  readonly startedAt = Date.now();
  readonly ready: Promise<void>;
  /** It lost an isolate thread: it takes no new runs and is killed once its runs are done. */
  degraded = false;
  /** The tenant whose run lost the thread: once only its runs are left, the child goes at once. */
  blamed: string | undefined;
  retired = false;
  exited = false;
  /** It said it is ready (its pool warmed). */
  isReady = false;
  /** When a message of it last arrived (performance.now()). */
  lastHeard = performance.now();
  /** Killed by the liveness check: something held its main thread. */
  stuck = false;
  /** Liveness checks in a row that found nothing heard from it since the one before. */
  silentChecks = 0;
  /** Killed past its memory bound (the watchdog), or found killed by the kernel in its cgroup. */
  overMemory = false;
  /** Its own cgroup (cgroup-v2 plans), once it is in it. */
  cgroup: ChildCgroup | null = null;
  /** The watchdog's last sample of its resident memory, and the least it saw (MiB); null before the first. */
  lastMb: number | null = null;
  leastMb: number | null = null;
  stats: PoolStats | null = null;
  #retireTimer: NodeJS.Timeout | undefined;
  #markReady: () => void = () => {};

  constructor(options: ChildPoolOptions, nice: number | undefined) {
    this.proc = fork(CHILD_ENTRY, [JSON.stringify({ pool: options, nice: nice ?? null })], {
      execArgv: ['--no-node-snapshot', ...SANDBOX_V8_FLAGS],
      // Nothing of the runner's environment (database URL, secrets) reaches the code's process.
      // Two malloc arenas instead of one per thread: isolated-vm's threads otherwise each keep
      // an arena of freed memory.
      env: { MALLOC_ARENA_MAX: '2' },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'json',
    });
    this.outbox = new Outbox<ToChild>((batch) => {
      if (!this.exited && this.proc.connected) this.proc.send(batch, (error) => void error);
    });
    this.ready = new Promise((resolve) => {
      this.#markReady = resolve;
    });
  }

  markReady(): void {
    this.#markReady();
  }

  /** Stops giving it runs; kills it once its runs are done, or after the grace. */
  retire(): void {
    if (this.retired) return;
    this.retired = true;
    this.#retireTimer = setTimeout(() => this.kill(), RETIRE_GRACE_MS);
    this.#retireTimer.unref();
    this.killWhenSpent();
  }

  /**
   * Kills a retired child once nothing worth waiting for runs in it: no run at all, or only runs
   * of the tenant that broke it (more of the same bomb, likely; they fail with `code_memory`, and
   * holding the child would hold its lost memory and CPU).
   */
  killWhenSpent(): void {
    if (!this.retired) return;
    for (const run of this.runs.values()) if (this.blamed === undefined || run.request.tenant !== this.blamed) return;
    this.kill();
  }

  kill(): void {
    clearTimeout(this.#retireTimer);
    this.markReady();
    if (!this.exited) this.proc.kill('SIGKILL');
  }
}

/** Runs `logic.code` in replaceable child processes; see the module comment. Starts nothing until used. */
export class ProcessSandbox {
  readonly #o: ProcessSandboxOptions;
  readonly #children = new Set<Child>();
  #serving: Child | null = null;
  #spare: Child | null = null;
  /**
   * A child that lost an isolate thread, still taking new runs on its healthy isolates until the
   * child replacing it is ready (≈ 0.25 s to start): other organizations' runs then never wait
   * for a process to start.
   */
  #bridge: Child | null = null;
  #nextId = 0;
  #replaced = 0;
  #closed = false;
  readonly #restarts = new Backoff({ minMs: MIN_BACKOFF_MS, maxMs: MAX_BACKOFF_MS });
  #spareTimer: NodeJS.Timeout | undefined;
  /** Until when a spare is kept started (after the last lost child). */
  #spareUntil = 0;
  #spareExpiry: NodeJS.Timeout | undefined;
  #liveness: NodeJS.Timeout | undefined;
  #watchdog: NodeJS.Timeout | undefined;
  /** When the liveness check last ran (performance.now()). */
  #lastCheck = performance.now();
  readonly #memory: MemoryBoundPlan;
  #memoryKills = 0;

  constructor(options: ProcessSandboxOptions) {
    this.#o = options;
    const size = Math.max(1, options.pool.size ?? 2);
    const maxIsolates = Math.max(size, options.pool.maxIsolates ?? size * 2);
    this.#memory =
      options.memory ?? watchdogPlan(defaultMemoryBoundMb(maxIsolates, Math.max(8, options.pool.memoryMb ?? 64)));
  }

  /** How the children's memory is bounded. */
  get memory(): MemoryBoundPlan {
    return this.#memory;
  }

  /** Starts the serving child; resolves once it is ready. */
  async warm(): Promise<void> {
    await this.#servingChild().ready;
  }

  /** Runs `request` like `runCode`: never throws; aborting `signal` stops the run. */
  run(request: CodeRequest, host: HostApi, signal?: AbortSignal): Promise<CodeResult> {
    if (this.#closed) return Promise.resolve(failure('internal_error', 'The sandbox is shut down.'));
    if (signal?.aborted)
      return Promise.resolve(
        failure('code_aborted', 'The run was stopped: its execution was cancelled or left this runner.'),
      );
    const refused = this.#o.refuse?.(request);
    if (refused) return Promise.resolve(refused);
    const child = this.#bridge ?? this.#servingChild();
    const id = ++this.#nextId;
    return new Promise<CodeResult>((resolve) => {
      const onAbort = () => run.child.outbox.post({ t: 'abort', id });
      signal?.addEventListener('abort', onAbort, { once: true });
      const run: Run = {
        child,
        request,
        host,
        started: performance.now(),
        retried: false,
        running: false,
        startedMb: null,
        resolve: (result) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(result);
        },
      };
      child.runs.set(id, run);
      child.outbox.post({ t: 'run', id, request });
    });
  }

  stats(): ProcessSandboxStats {
    return {
      pool: this.#serving?.stats ?? null,
      children: this.#children.size,
      replaced: this.#replaced,
      servingPid: this.#serving?.proc.pid,
      sparePid: this.#spare?.proc.pid,
      memoryKills: this.#memoryKills,
    };
  }

  /** Kills every child; runs in progress end with `internal_error`. */
  async dispose(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#liveness);
    this.#liveness = undefined;
    clearTimeout(this.#watchdog);
    this.#watchdog = undefined;
    clearTimeout(this.#spareTimer);
    clearTimeout(this.#spareExpiry);
    const exits = [...this.#children].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exited) resolve();
          else child.proc.once('exit', () => resolve());
          child.kill();
        }),
    );
    await Promise.all(exits);
  }

  /** The serving child once `dead` no longer serves (it just died). */
  #servingChildAfter(dead: Child): Child {
    if (this.#serving === dead) this.#serving = null;
    if (this.#spare === dead) this.#spare = null;
    return this.#servingChild();
  }

  #servingChild(): Child {
    if (!this.#serving) {
      this.#serving = this.#spare ?? this.#start();
      this.#spare = null;
      if (Date.now() < this.#spareUntil) this.#startSpare();
    }
    return this.#serving;
  }

  /** A child was lost: keep a spare started for a while, so that the next loss finds one ready. */
  #keepSpare(): void {
    this.#spareUntil = Date.now() + SPARE_KEEP_MS;
    clearTimeout(this.#spareExpiry);
    this.#spareExpiry = setTimeout(() => {
      const spare = this.#spare;
      this.#spare = null;
      spare?.kill();
    }, SPARE_KEEP_MS);
    this.#spareExpiry.unref();
  }

  #startSpare(delayMs = 0): void {
    if (this.#closed || this.#spare || this.#spareTimer) return;
    if (delayMs === 0) {
      this.#spare = this.#start();
      return;
    }
    this.#spareTimer = setTimeout(() => {
      this.#spareTimer = undefined;
      this.#startSpare();
    }, delayMs);
    this.#spareTimer.unref();
  }

  #start(): Child {
    const child = new Child(this.#o.pool, this.#o.nice);
    this.#children.add(child);
    this.#watchLiveness();
    child.proc.on('message', (batch: unknown) => this.#receive(child, fromChild(batch)));
    // A process that could not be started (EAGAIN, ENOMEM under load) may never emit 'exit':
    // its runs would wait forever.
    child.proc.on('error', () => {
      if (child.proc.pid === undefined) this.#exited(child, null, null);
    });
    child.proc.on('exit', (code, signal) => this.#exited(child, code, signal));
    this.#o.log?.('sandbox child started', { child_pid: child.proc.pid });
    const pid = child.proc.pid;
    if (pid !== undefined && this.#memory.mechanism === 'cgroup-v2') {
      void ChildCgroup.enter(this.#memory, pid).then((cgroup) => {
        if (child.exited) cgroup?.remove();
        else if (cgroup) child.cgroup = cgroup;
        else
          this.#o.log?.('sandbox child could not enter its cgroup: its memory is sampled instead', { child_pid: pid });
        this.#watchMemory();
      });
    } else {
      this.#watchMemory();
    }
    return child;
  }

  /**
   * Kills children past the memory bound: every SAMPLE_MS each child's resident memory is read
   * from /proc (not those in a cgroup of their own: the kernel bounds them). Runs while any child
   * lives; a read never overlaps the next.
   */
  #watchMemory(): void {
    if (this.#watchdog !== undefined || this.#closed) return;
    const sample = async () => {
      const children = [...this.#children].filter(
        (child) => child.cgroup === null && !child.exited && !child.overMemory,
      );
      const sizes = await Promise.all(
        children.map((child) => (child.proc.pid === undefined ? Promise.resolve(null) : residentMb(child.proc.pid))),
      );
      for (const [i, child] of children.entries()) {
        const mb = sizes[i];
        if (mb === null || mb === undefined) continue;
        child.lastMb = mb;
        child.leastMb = Math.min(child.leastMb ?? mb, mb);
        if (mb <= this.#memory.boundMb || child.exited || child.overMemory) continue;
        this.#o.log?.('sandbox child over its memory bound: killed', {
          child_pid: child.proc.pid,
          resident_mib: Math.round(mb),
          bound_mib: this.#memory.boundMb,
          runs_in_progress: child.runs.size,
        });
        child.overMemory = true;
        child.kill();
      }
      if (this.#children.size === 0 || this.#closed) {
        this.#watchdog = undefined;
        return;
      }
      this.#watchdog = setTimeout(() => void sample(), SAMPLE_MS);
      this.#watchdog.unref();
    };
    this.#watchdog = setTimeout(() => void sample(), SAMPLE_MS);
    this.#watchdog.unref();
  }

  /** Kills ready children that stopped reporting (UNRESPONSIVE_MS); runs while any child lives. */
  #watchLiveness(): void {
    if (this.#liveness !== undefined) return;
    this.#liveness = setInterval(() => {
      if (this.#children.size === 0 || this.#closed) {
        clearInterval(this.#liveness);
        this.#liveness = undefined;
        return;
      }
      const now = performance.now();
      const previousCheck = this.#lastCheck;
      this.#lastCheck = now;
      const unresponsiveMs = this.#o.unresponsiveMs ?? UNRESPONSIVE_MS;
      for (const child of this.#children) {
        if (child.exited) continue;
        if (!child.isReady) {
          if (Date.now() - child.startedAt < READY_WITHIN_MS) continue;
          this.#o.log?.('sandbox child never became ready: killed', { child_pid: child.proc.pid });
          child.kill();
          continue;
        }
        // Silence counts only in checks that found nothing heard since the one before: after this
        // thread itself stalled (a saturated host, a long collection), the child's reports still
        // wait in the pipe, read after the timers, and the first check must not judge it by them.
        child.silentChecks = child.lastHeard >= previousCheck ? 0 : child.silentChecks + 1;
        if (now - child.lastHeard < unresponsiveMs || child.silentChecks * LIVENESS_EVERY_MS < unresponsiveMs) continue;
        this.#o.log?.('sandbox child unresponsive: killed', {
          child_pid: child.proc.pid,
          silent_ms: Math.round(now - child.lastHeard),
          runs_in_progress: child.runs.size,
        });
        // Not retired: its exit counts as a death, so it is replaced and its runs are tried again
        // once, or blamed (a crash, #crashSuspect).
        child.stuck = true;
        child.kill();
      }
    }, LIVENESS_EVERY_MS);
    this.#liveness.unref();
  }

  #receive(child: Child, messages: FromChild[]): void {
    child.lastHeard = performance.now();
    for (const m of messages) {
      switch (m.t) {
        case 'ready':
          child.isReady = true;
          child.markReady();
          break;
        case 'stats':
          child.stats = m.stats;
          break;
        case 'started': {
          const run = child.runs.get(m.id);
          if (run) {
            run.running = true;
            run.startedMb = child.lastMb;
          }
          break;
        }
        case 'result': {
          const run = child.runs.get(m.id);
          if (!run) break;
          child.runs.delete(m.id);
          run.resolve(m.result);
          child.killWhenSpent();
          break;
        }
        case 'requeue': {
          // A run that had not started in a retired child: it runs in the serving one instead.
          const run = child.runs.get(m.id);
          if (!run) break;
          child.runs.delete(m.id);
          child.killWhenSpent();
          if (this.#closed) {
            run.resolve(failure('internal_error', 'The sandbox is shut down.'));
            break;
          }
          const refused = this.#o.refuse?.(run.request);
          if (refused) {
            run.resolve(refused);
            break;
          }
          const next = this.#servingChild();
          run.child = next;
          next.runs.set(m.id, run);
          next.outbox.post({ t: 'run', id: m.id, request: run.request });
          break;
        }
        case 'log': {
          const run = child.runs.get(m.id);
          if (run && (logLevels as readonly string[]).includes(m.level)) run.host.log(m.level as LogLevel, m.message);
          break;
        }
        case 'call': {
          const run = child.runs.get(m.id);
          if (run) void this.#serve(child, m.id, m.call, m.op, m.args, run.host);
          break;
        }
        case 'degraded':
          // onDegraded first: it cools the tenant down, so `refuse` stops its runs handed back below.
          this.#o.onDegraded?.(m.reason, m.tenant ?? undefined);
          if (!child.degraded) {
            child.degraded = true;
            child.blamed = m.tenant ?? undefined;
            this.#replace(child, 'lost an isolate thread');
          }
          break;
      }
    }
  }

  async #serve(child: Child, id: number, call: number, op: string, args: unknown[], host: HostApi): Promise<void> {
    let message: ToChild;
    try {
      const value = await callHost(host, op, args);
      message = { t: 'answer', id, call, ok: true, value: value ?? null };
    } catch (error) {
      const refusal: CallRefusal | null = hostRefusal(error);
      if (refusal === null) host.reportError?.(error);
      message = { t: 'answer', id, call, ok: false, error: refusal };
    }
    child.outbox.post(message);
  }

  /**
   * Sends new runs elsewhere: at once when the replacement (the spare) is ready, else once it is,
   * the lost child serving as the bridge until then. Then the old child finishes what it has
   * and goes.
   */
  #replace(child: Child, why: string): void {
    this.#replaced++;
    this.#keepSpare();
    const wasServing = this.#serving === child;
    if (wasServing) this.#serving = null;
    if (this.#spare === child) this.#spare = null;
    if (this.#bridge === child) this.#bridge = null;
    const next = this.#closed ? null : this.#servingChild();
    if (next && wasServing && !next.isReady && child.isReady && !child.exited) {
      this.#bridge = child;
      this.#o.log?.('sandbox child serving until its replacement is ready', { child_pid: child.proc.pid, reason: why });
      void next.ready.then(() => {
        if (this.#bridge === child) this.#bridge = null;
        this.#retire(child, why);
      });
      return;
    }
    this.#retire(child, why);
  }

  #retire(child: Child, why: string): void {
    if (child.retired || child.exited) return;
    this.#o.log?.('sandbox child retired', {
      child_pid: child.proc.pid,
      reason: why,
      runs_in_progress: child.runs.size,
    });
    child.outbox.post({ t: 'retire', id: 1 });
    child.retire();
  }

  /**
   * The organization a child's death is blamed on, if any: only a crash from within (a signal the
   * process raises on itself: V8's fatal out-of-memory abort, a segmentation fault) or a child the
   * liveness check killed, and only when the runs whose code may have been running in it
   * (`running`) are all one organization's — narrowed to those that already lost a child, when
   * some did. A kill from outside (SIGKILL: an operator, the kernel's OOM killer) blames no one:
   * its runs get their one more try. A tenantless run is never blamed.
   */
  #crashSuspect(child: Child, signal: NodeJS.Signals | null, runs: Array<[number, Run]>): string | undefined {
    // A degraded child's organization was blamed when it lost its isolate, and a retired child is
    // on its way out for that: neither death counts again.
    if (child.degraded || child.retired) return undefined;
    if (!(child.stuck || child.overMemory || (signal !== null && CRASH_SIGNALS.has(signal)))) return undefined;
    const running = runs.map(([, run]) => run).filter((run) => run.running);
    if (child.overMemory) {
      // The growth happened while the suspects ran: a run that started when the child was already
      // more than halfway from its resting size to the bound (another organization's quick run
      // caught by the kill) did not make it. Those retried before are not singled out here: an
      // innocent run's second try may well meet the same bomb's second try.
      const rest = child.leastMb ?? 0;
      const halfway = rest + (this.#memory.boundMb - rest) / 2;
      const grew = running.filter((run) => run.startedMb === null || run.startedMb <= halfway);
      const suspects = new Set((grew.length > 0 ? grew : running).map((run) => run.request.tenant));
      const [only] = suspects;
      return suspects.size === 1 ? only : undefined;
    }
    const again = running.filter((run) => run.retried);
    const suspects = new Set((again.length > 0 ? again : running).map((run) => run.request.tenant));
    const [only] = suspects;
    return suspects.size === 1 ? only : undefined;
  }

  #exited(child: Child, code: number | null, signal: NodeJS.Signals | null): void {
    if (child.exited) return;
    child.exited = true;
    child.markReady();
    this.#children.delete(child);
    if (this.#bridge === child) this.#bridge = null;
    if (child.cgroup) {
      if (!child.overMemory && signal === 'SIGKILL' && child.cgroup.oomKilled()) child.overMemory = true;
      child.cgroup.remove();
    }
    if (child.overMemory) this.#memoryKills++;
    // A retired child killed for its memory before its grace ran out: its other runs get their
    // second try like any other death's.
    const unexpected = (!child.retired || child.overMemory) && !this.#closed;
    const runs = [...child.runs.entries()];
    child.runs.clear();
    const crashedBy = unexpected ? this.#crashSuspect(child, signal, runs) : undefined;
    if (unexpected) {
      this.#o.log?.('sandbox child died', {
        child_pid: child.proc.pid,
        code,
        signal,
        ...(child.overMemory ? { over_memory_bound_mib: this.#memory.boundMb } : {}),
        runs_in_progress: runs.length,
        ...(crashedBy !== undefined ? { blamed_org_id: crashedBy } : {}),
      });
      this.#replaced++;
      this.#keepSpare();
      if (crashedBy !== undefined)
        this.#o.onDegraded?.(
          `The sandbox process ${child.overMemory ? `used more memory than its bound (${this.#memory.boundMb} MiB)` : child.stuck ? 'stopped answering' : `crashed (${signal})`} while only this organization's code ran in it.`,
          crashedBy,
        );
    }
    for (const [id, run] of runs) {
      // A child that died by itself (not one that lost an isolate to a bomb) costs its runs one
      // more try in a new child: node runs are at-least-once anyway (docs/architecture.md), and a
      // run whose second child dies too fails, so code that kills its process cannot loop.
      // A lost child that died while it bridged: other organizations' runs get that try too.
      const blamed =
        (child.degraded && (child.blamed === undefined || run.request.tenant === child.blamed)) ||
        (crashedBy !== undefined && run.request.tenant === crashedBy);
      if (unexpected && !blamed && !run.retried) {
        run.retried = true;
        run.running = false;
        const next = this.#servingChildAfter(child);
        run.child = next;
        next.runs.set(id, run);
        next.outbox.post({ t: 'run', id, request: run.request });
        continue;
      }
      run.resolve(
        blamed
          ? failure(
              'code_memory',
              child.overMemory
                ? `The code grew its sandbox process past the sandbox memory bound (${this.#memory.boundMb} MiB) and the process was replaced.`
                : 'The code used more than the sandbox memory bound and its sandbox process was replaced.',
            )
          : failure('internal_error', 'The sandbox process stopped during the run.'),
      );
    }
    if (!unexpected) return;
    const young = Date.now() - child.startedAt < STABLE_AFTER_MS;
    if (!young) this.#restarts.reset();
    const wait = young ? this.#restarts.next() : 0;
    if (this.#spare === child) {
      this.#spare = null;
      this.#startSpare(wait);
      return;
    }
    if (this.#serving === child) {
      this.#serving = null;
      // The spare takes over at once, or a new child starts now rather than at the next run.
      this.#servingChild();
    }
  }
}

function failure(code: string, message: string): CodeResult {
  return { kind: 'error', error: { code, message }, stats: { ...EMPTY_STATS } };
}

/**
 * The HostApi method named by `op`. The child's bridge already checked the call, but the child
 * runs hostile code, so the shapes HostApi relies on are checked again here.
 */
function callHost(host: HostApi, op: string, args: unknown[]): Promise<unknown> {
  const aliasFirst = op === 'objects.get' || op === 'objects.put';
  if (aliasFirst && typeof args[0] !== 'string') return Promise.reject(new Error(`${op} without an alias`));
  switch (op) {
    case 'objects.get':
      return host.objects.get(args[0] as string);
    case 'objects.put':
      return host.objects.put(args[0] as string, args[1]);
    case 'objects.list':
      return host.objects.list(args[0]);
    case 'thread.post':
      return host.thread.post(args[0]);
    case 'graph.mutate':
      return host.graph.mutate(args[0]);
    case 'graph.query':
      return host.graph.query(args[0]);
    case 'fetch':
      return host.fetch(args[0], args[1]);
    case 'credentials.get':
      return host.credentials.get(args[0]);
    default:
      return Promise.reject(new Error(`unknown host call ${op}`));
  }
}
