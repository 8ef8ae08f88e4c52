/**
 * Warm isolates for `logic.code` runs. An isolate serves one run at a time, in a context whose realm
 * was frozen when it was made and whose per-run state every run resets (docs/sandbox.md, "Context
 * reuse"). By default (`contexts: 'shared'`) each isolate keeps one context for the runs of every
 * tenant; with `contexts: 'tenant'` it keeps one per tenant (the execution's organization), an LRU
 * bounded by bytes (`contextBytesPerIsolate`, at each context's measured heap size), each serving
 * the runs of one tenant only. A run without a kept context takes the isolate's spare one, prepared
 * while the isolate was idle, or makes one. An
 * isolate is retired after `maxRunsPerIsolate` runs, when its heap passes `maxHeapBytes`, and
 * after any run that was stopped (timeout, memory, shutdown): a stopped isolate is never handed
 * out again, and its contexts go with it.
 *
 * isolated-vm cannot always stop a run: some allocations inside V8 builtins outrun the memory
 * bound, and isolated-vm then parks the isolate's thread forever (reporting a "catastrophic
 * error") instead of aborting the process. The pool counts those as abandoned, marks itself
 * degraded and calls `onDegraded`; the runner process should then drain and exit so its
 * supervisor starts a clean one (docs/sandbox.md).
 */
import ivm from 'isolated-vm';
import { FairQueue } from './fair-queue.ts';
import { contextSnapshot } from './context-snapshot.ts';
import { contextRecipe, prepareContext, type ContextRecipe, type PreparedContext } from './host-bridge.ts';
import { defaultBounds, type SandboxBounds } from './messages.ts';
import { vettedSet, type VettedSet } from './modules.ts';

const MiB = 1024 * 1024;

export interface IsolatePoolOptions {
  /**
   * Isolates the pool keeps, and the most one tenant's runs hold at once. Default 2. A tenant
   * holding none while all are busy gets one more, up to `maxIsolates`, so another tenant's
   * long runs can never shut it out (docs/sandbox.md, "Fair share").
   */
  size?: number;
  /** Most isolates alive at once, the extra ones made for tenants that held none. Default 2 × size. */
  maxIsolates?: number;
  /** How long an extra isolate (past `size`) may stay idle before it is retired. Default 5000 ms. */
  extraIdleMs?: number;
  /**
   * An extra isolate is made only once every busy isolate's run has held it this long: short runs
   * free an isolate soon, and extra isolates would only add contexts and threads on the same
   * cores. Default 50 ms.
   */
  extraAfterMs?: number;
  /** Idle isolates `warm()` prepares ahead of demand. Default 1. */
  warm?: number;
  /**
   * Whose runs a context serves. 'shared' (default): one context per isolate serves the runs of
   * every tenant, one at a time; what keeps runs apart is the frozen realm and the per-run reset,
   * which also keep apart the runs of one tenant. 'tenant': a context serves one tenant's runs, so
   * V8's separation of contexts stands between tenants as well; a tenant without a kept context
   * pays for a new one (≈ 0.6 ms of CPU), and over many tenants most runs do (docs/sandbox.md,
   * "Whose runs a context serves").
   */
  contexts?: ContextScope;
  /** Heap bound of each isolate in MiB (isolated-vm `memoryLimit`, minimum 8). Default 64. */
  memoryMb?: number;
  /** Runs after which an isolate is retired. Default 5000: a retired isolate takes its tenants' contexts and their optimised code with it, so a context should serve hundreds of runs (heap growth still retires it early). */
  maxRunsPerIsolate?: number;
  /**
   * With `contexts: 'tenant'`, bytes of heap an isolate may spend on kept contexts: the least
   * recently used tenant's context goes once its contexts' measured size passes this. Default a
   * quarter of memoryMb.
   */
  contextBytesPerIsolate?: number;
  /** With `contexts: 'tenant'`, most tenants' contexts an isolate keeps whatever their size. Default 512. */
  maxContextsPerIsolate?: number;
  /**
   * Heap use (bytes, after a run) past which an isolate is retired, and likewise what its runs
   * charged outside the heap in all (run caps). Default half of memoryMb.
   */
  maxHeapBytes?: number;
  /** How long a finished run waits for host calls still in progress. Default 5000 ms. */
  hostSettleMs?: number;
  /** How long a stopped run's isolate may take to unwind before it counts as abandoned. Default 2000 ms. */
  abandonGraceMs?: number;
  /** Bounds applied to every run; see messages.ts. */
  bounds?: Partial<SandboxBounds>;
  /** Make contexts from the context snapshot (context-snapshot.ts). Default true; false runs the bootstrap in each context, the fallback when V8 refuses a snapshot. */
  contextSnapshot?: boolean;
  /** The vetted module set (default: sandbox/vetted/). */
  vetted?: VettedSet;
  /**
   * Called once per reason when the pool can no longer promise a clean process, with the tenant
   * whose run lost the isolate thread when known.
   */
  onDegraded?: (reason: string, tenant: string | undefined) => void;
}

export interface PoolStats {
  size: number;
  maxIsolates: number;
  live: number;
  idle: number;
  busy: number;
  waiting: number;
  created: number;
  retired: number;
  /** Isolates created by this pool that are not disposed (should be 0 after `dispose()`). */
  undisposed: number;
  runs: number;
  recycled: number;
  /** Contexts alive in live isolates, spares included. */
  contexts: number;
  /** Contexts made (each bootstrapped and locked down once). */
  contextsCreated: number;
  /** Runs that found their tenant's context kept from an earlier run. */
  contextsReused: number;
  contextsEvicted: number;
  /** Measured heap bytes of one context. */
  contextBytes: number;
  abandoned: number;
  catastrophic: number;
  degraded: boolean;
  reasons: string[];
  /** Tenants with runs holding or waiting for an isolate ('' = runs without a tenant). */
  tenants: Array<{ tenant: string; waiting: number; busy: number }>;
}

/** Whose runs a context serves (IsolatePoolOptions.contexts). */
export type ContextScope = 'shared' | 'tenant';

/** The key of the one context a shared-scope isolate keeps (tenants' keys are organization ids). */
const SHARED = '*';

type Waiter = { resolve: (lease: IsolateLease) => void; reject: (error: Error) => void; cleanup?: () => void };

/** Why an isolate was disposed by us; null while it is alive or when isolated-vm disposed it. */
export type DisposeCause = 'pool' | 'stopped' | 'recycled' | null;

/** Counts the pool keeps about contexts, shared with its leases. */
interface ContextCounters {
  contextsCreated: number;
  contextsReused: number;
  /** Contexts dropped from an isolate's cache to keep it within its bytes (or count). */
  contextsEvicted: number;
  /** Heap bytes one context takes, measured when contexts are made (a moving average). */
  contextBytes: number;
}

/** Tenants remembered as out of probation; the least recently trusted are forgotten first. */
const MAX_TRUSTED = 10_000;

/** How far (isolate milliseconds) a tenant may be behind the fairest one and still be served first on an isolate that keeps its context. */
const LOCALITY_SLACK_MS = 20;

/** A context's heap before any measurement: what a locked-down context took on Node 24. */
const INITIAL_CONTEXT_BYTES = 240 * 1024;

/** One pooled isolate, leased to one run at a time. */
export class IsolateLease {
  readonly isolate: ivm.Isolate;
  readonly #recipe: ContextRecipe;
  readonly #shared: boolean;
  readonly #maxContexts: number;
  readonly #contextBudget: number;
  readonly #counters: ContextCounters;
  #spare: PreparedContext | null = null;
  /** Kept contexts by tenant, least recently used first (Map keeps insertion order). */
  readonly #contexts = new Map<string, PreparedContext>();
  runs = 0;
  /**
   * What this isolate's runs charged outside the heap (run caps: resizable buffers, Intl objects,
   * Segmenter output). The isolate cannot say how much of it was freed, and a run can keep some
   * alive past its end (a private field stamped on a frozen object), so past maxHeapBytes the
   * isolate is retired, which frees all of it.
   */
  outsideBytes = 0;
  /** The tenant of the run holding the lease ('' without one) and when it took it. */
  tenant = '';
  startedAt = 0;
  /** Retires an extra isolate that stayed idle (IsolatePoolOptions.extraIdleMs). */
  idleTimer: NodeJS.Timeout | undefined;
  disposedBy: DisposeCause = null;
  /** Message of isolated-vm's catastrophic error, once one was reported for this isolate. */
  catastrophe: string | null = null;
  /** Set by the run holding the lease, to hear of a catastrophic error at once. */
  onCatastrophe: ((message: string) => void) | null = null;

  constructor(
    isolate: ivm.Isolate,
    fromSnapshot: boolean,
    bounds: SandboxBounds,
    shared: boolean,
    maxContexts: number,
    contextBudget: number,
    counters: ContextCounters,
  ) {
    this.isolate = isolate;
    this.#shared = shared;
    this.#maxContexts = maxContexts;
    this.#contextBudget = contextBudget;
    this.#counters = counters;
    this.#recipe = contextRecipe(isolate, bounds, fromSnapshot);
  }

  /** True when a context that can serve `tenant` at once is kept here. */
  hasContext(tenant: string): boolean {
    return this.#contexts.has(this.#shared ? SHARED : tenant);
  }

  /** Contexts alive in this isolate, the spare included. */
  get contexts(): number {
    return this.#contexts.size + (this.#spare ? 1 : 0);
  }

  /**
   * The context for a run of `tenant`: the one kept for it (the shared one, or the tenant's own),
   * else the spare or a new one, which the run binds to that key. Without a tenant, a context used
   * once and never kept. The context is out of the cache until `returnContext`, so a run that
   * fails to return it (it was stopped) leaves nothing behind for the next one.
   */
  takeContext(tenant: string | undefined): PreparedContext {
    const key = tenant === undefined ? null : this.#shared ? SHARED : tenant;
    if (key !== null) {
      const kept = this.#contexts.get(key);
      if (kept) {
        this.#contexts.delete(key);
        this.#counters.contextsReused++;
        return kept;
      }
    }
    const fresh = this.#spare ?? this.#prepare();
    this.#spare = null;
    fresh.tenant = key;
    return fresh;
  }

  /**
   * Keeps `prepared` for its tenant's next run, evicting the least recently used context past
   * `maxContextsPerIsolate`; releases it when it has no tenant or the isolate is gone.
   */
  returnContext(prepared: PreparedContext): void {
    const tenant = prepared.tenant;
    if (tenant === null || this.isolate.isDisposed || this.disposedBy !== null || this.#contexts.has(tenant)) {
      prepared.release();
      return;
    }
    this.#contexts.set(tenant, prepared);
    // Bounded by bytes: as many contexts as fit the budget at their measured size.
    const keep = Math.min(this.#maxContexts, Math.floor(this.#contextBudget / this.#counters.contextBytes));
    for (const [oldest, context] of this.#contexts) {
      if (this.#contexts.size <= keep) break;
      this.#contexts.delete(oldest);
      context.release();
      this.#counters.contextsEvicted++;
    }
  }

  /** Makes the context the next run without one would take (none while a shared one is kept). */
  prepareSpare(): void {
    if (this.#shared && this.#contexts.size > 0) return;
    this.#spare ??= this.#prepare();
  }

  #prepare(): PreparedContext {
    const before = this.isolate.getHeapStatisticsSync().used_heap_size;
    const prepared = prepareContext(this.isolate, this.#recipe);
    const grown = this.isolate.getHeapStatisticsSync().used_heap_size - before;
    // A collection during the preparation shows as no growth; only real growth is averaged in.
    if (grown > 16 * 1024) this.#counters.contextBytes = Math.round(this.#counters.contextBytes * 0.9 + grown * 0.1);
    this.#counters.contextsCreated++;
    return prepared;
  }

  /** Disposes the isolate unless isolated-vm already did, or parked its thread (disposing could block). */
  dispose(cause: Exclude<DisposeCause, null>): void {
    this.#spare?.release();
    this.#spare = null;
    for (const context of this.#contexts.values()) context.release();
    this.#contexts.clear();
    if (this.isolate.isDisposed || this.catastrophe !== null) return;
    this.disposedBy = cause;
    try {
      this.isolate.dispose();
    } catch {
      // Disposed concurrently by isolated-vm (memory bound).
    }
  }
}

/** A pool of warm isolates; see the module comment. Creates nothing until asked. */
export class IsolatePool {
  readonly bounds: Readonly<SandboxBounds>;
  readonly #useSnapshot: boolean;
  readonly vetted: VettedSet;
  readonly memoryMb: number;
  readonly hostSettleMs: number;
  readonly #size: number;
  readonly #maxIsolates: number;
  readonly #extraIdleMs: number;
  readonly #extraAfterMs: number;
  #extraCheck: NodeJS.Timeout | undefined;
  readonly #warm: number;
  readonly #maxRuns: number;
  readonly #sharedContexts: boolean;
  readonly #maxContexts: number;
  readonly #contextBudget: number;
  readonly #maxHeapBytes: number;
  readonly #abandonGraceMs: number;
  readonly #onDegraded: ((reason: string, tenant: string | undefined) => void) | undefined;
  readonly #live = new Set<IsolateLease>();
  readonly #created = new Set<ivm.Isolate>();
  readonly #idle: IsolateLease[] = [];
  readonly #queue = new FairQueue<Waiter>();
  /** Tenants whose last run ended by itself here: out of probation (see `#grantable`). */
  readonly #trusted = new Set<string>();
  readonly #zombies = new Set<NodeJS.Timeout>();
  readonly #immediates = new Set<NodeJS.Immediate>();
  readonly #reasons: string[] = [];
  #closed = false;
  #stats = { created: 0, retired: 0, runs: 0, recycled: 0, abandoned: 0, catastrophic: 0 };
  readonly #contextCounters: ContextCounters = {
    contextsCreated: 0,
    contextsReused: 0,
    contextsEvicted: 0,
    contextBytes: INITIAL_CONTEXT_BYTES,
  };

  constructor(options: IsolatePoolOptions = {}) {
    this.#size = Math.max(1, options.size ?? 2);
    this.#maxIsolates = Math.max(this.#size, options.maxIsolates ?? this.#size * 2);
    this.#extraIdleMs = options.extraIdleMs ?? 5000;
    this.#extraAfterMs = Math.max(0, options.extraAfterMs ?? 50);
    this.#warm = Math.min(this.#size, Math.max(0, options.warm ?? 1));
    this.memoryMb = Math.max(8, options.memoryMb ?? 64);
    this.#maxRuns = Math.max(1, options.maxRunsPerIsolate ?? 5000);
    this.#sharedContexts = (options.contexts ?? 'shared') === 'shared';
    this.#maxContexts = Math.max(0, options.maxContextsPerIsolate ?? 512);
    this.#contextBudget = Math.max(0, options.contextBytesPerIsolate ?? (this.memoryMb * MiB) / 4);
    this.#maxHeapBytes = options.maxHeapBytes ?? (this.memoryMb * MiB) / 2;
    this.hostSettleMs = options.hostSettleMs ?? 5000;
    this.#abandonGraceMs = options.abandonGraceMs ?? 2000;
    // A run's memory outside the heap is bounded like its heap, unless the bounds say otherwise.
    this.bounds = Object.freeze({ ...defaultBounds, maxOutsideHeapBytes: this.memoryMb * MiB, ...options.bounds });
    this.#useSnapshot = options.contextSnapshot ?? true;
    this.vetted = options.vetted ?? vettedSet();
    this.#onDegraded = options.onDegraded;
  }

  /** True once an isolate thread was lost; the process should be replaced (see module comment). */
  get degraded(): boolean {
    return this.#reasons.length > 0;
  }

  /** Creates idle isolates, each with a spare context, up to the `warm` option. */
  async warm(): Promise<void> {
    while (!this.#closed && this.#idle.length < this.#warm && this.#live.size < this.#size) {
      const lease = this.#create();
      lease.prepareSpare();
      this.#idle.push(lease);
    }
  }

  /**
   * Leases an isolate for a run of `tenant`: at once when one is idle, or a new one can be made
   * (under `size`, or past it for a tenant holding none), unless the tenant already holds `size`;
   * otherwise the run waits in the fair queue. Aborting `signal` takes a waiting run out of it.
   */
  acquire(tenant?: string, signal?: AbortSignal): Promise<IsolateLease> {
    if (this.#closed) return Promise.reject(new Error('The sandbox pool is shut down.'));
    const key = tenant ?? '';
    try {
      const lease = this.#grant(key);
      if (lease) return Promise.resolve(lease);
    } catch (error) {
      return Promise.reject(error as Error);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      this.#queue.enqueue(key, waiter);
      this.#scheduleExtraCheck();
      if (!signal) return;
      const onAbort = () => {
        if (this.#queue.remove(key, waiter)) reject(new Error('The run was aborted while it waited for an isolate.'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      waiter.cleanup = () => signal.removeEventListener('abort', onAbort);
    });
  }

  /** Whether a run of a tenant holding `busy` isolates may take one now. */
  #grantable(busy: number, tenant: string): boolean {
    // Probation: a tenant with no run ended by itself here yet, or whose last run had to be
    // stopped (a timeout, a memory bomb), holds one isolate at a time, so a burst of bombs or
    // endless loops goes off one by one, not `size` at once.
    if (busy >= (this.#trusted.has(tenant) ? this.#size : 1)) return false;
    if (this.#idle.length > 0 || this.#live.size < this.#size) return true;
    return busy === 0 && this.#live.size < this.#maxIsolates && this.#allHeldLong();
  }

  /** Marks `tenant` as past probation (most recently trusted last; the oldest forgotten past the bound). */
  #trust(tenant: string): void {
    this.#trusted.delete(tenant);
    this.#trusted.add(tenant);
    if (this.#trusted.size > MAX_TRUSTED) this.#trusted.delete(this.#trusted.values().next().value as string);
  }

  /** True when every busy isolate's run has held it at least `extraAfterMs`. */
  #allHeldLong(): boolean {
    const since = performance.now() - this.#extraAfterMs;
    for (const lease of this.#live) if (lease.startedAt > since && !this.#idle.includes(lease)) return false;
    return true;
  }

  /**
   * While runs wait and an extra isolate could still be made, looks again once the youngest run
   * has held its isolate `extraAfterMs`: a tenant holding none then gets one without waiting for
   * an isolate to free.
   */
  #scheduleExtraCheck(): void {
    if (
      this.#extraCheck !== undefined ||
      this.#closed ||
      this.#queue.waiting === 0 ||
      this.#live.size >= this.#maxIsolates
    )
      return;
    this.#extraCheck = setTimeout(() => {
      this.#extraCheck = undefined;
      this.#dispatch();
    }, this.#extraAfterMs + 1);
    this.#extraCheck.unref();
  }

  /** An isolate for a run of `tenant`, or undefined when it must wait. */
  #grant(tenant: string): IsolateLease | undefined {
    if (!this.#grantable(this.#queue.busy(tenant), tenant)) return undefined;
    const lease = this.#takeIdle(tenant) ?? this.#create();
    this.#begin(lease, tenant);
    return lease;
  }

  /** An idle isolate, preferring one that keeps `tenant`'s context (no new context to make). */
  #takeIdle(tenant: string): IsolateLease | undefined {
    if (this.#idle.length === 0) return undefined;
    let at = this.#idle.length - 1;
    for (let i = this.#idle.length - 1; i >= 0; i--) {
      if ((this.#idle[i] as IsolateLease).hasContext(tenant)) {
        at = i;
        break;
      }
    }
    const [lease] = this.#idle.splice(at, 1) as [IsolateLease];
    clearTimeout(lease.idleTimer);
    lease.idleTimer = undefined;
    return lease;
  }

  #begin(lease: IsolateLease, tenant: string): void {
    lease.tenant = tenant;
    lease.startedAt = performance.now();
    this.#queue.started(tenant, lease.startedAt);
  }

  /**
   * Hands free isolates (idle, or room to make one) to waiting runs, fairest first, but with
   * contexts kept per tenant, a tenant whose context the most recently freed isolate keeps goes
   * first while it is within
   * `LOCALITY_SLACK_MS` of the fairest: a run on its own context skips making one (about a
   * millisecond of CPU).
   */
  #dispatch(): void {
    while (!this.#closed && this.#queue.waiting > 0) {
      const freed = this.#idle.at(-1);
      const next = this.#queue.dequeue(
        (tenant, busy) => this.#grantable(busy, tenant),
        performance.now(),
        // Every isolate can serve every tenant at once when contexts are shared.
        freed && !this.#sharedContexts ? (tenant) => freed.hasContext(tenant) : undefined,
        LOCALITY_SLACK_MS,
      );
      if (!next) {
        this.#scheduleExtraCheck();
        return;
      }
      next.waiter.cleanup?.();
      let lease: IsolateLease;
      try {
        lease = this.#takeIdle(next.tenant) ?? this.#create();
      } catch (error) {
        next.waiter.reject(error as Error);
        continue;
      }
      this.#begin(lease, next.tenant);
      next.waiter.resolve(lease);
    }
  }

  /**
   * Takes a lease back. A healthy isolate within its run and heap bounds goes to a waiting run or
   * back to the idle list; anything else is retired.
   */
  release(
    lease: IsolateLease,
    healthy: boolean,
    verdict: 'trust' | 'distrust' | 'neutral' = healthy ? 'trust' : 'distrust',
  ): void {
    lease.runs++;
    lease.onCatastrophe = null;
    this.#stats.runs++;
    this.#queue.finished(lease.tenant, lease.startedAt);
    // A run that had to be stopped (its deadline, its memory) puts its tenant back on probation.
    if (verdict === 'trust') this.#trust(lease.tenant);
    else if (verdict === 'distrust') this.#trusted.delete(lease.tenant);
    if (!healthy || this.#closed || lease.isolate.isDisposed || lease.catastrophe !== null) {
      this.#retire(lease, 'stopped');
      return;
    }
    if (lease.runs >= this.#maxRuns) {
      this.#stats.recycled++;
      this.#retire(lease, 'recycled');
      return;
    }
    let heap: ivm.HeapStatistics;
    try {
      // Synchronous on an idle isolate: cheaper than a thread hop.
      heap = lease.isolate.getHeapStatisticsSync();
    } catch {
      this.#retire(lease, 'stopped');
      return;
    }
    if (
      heap.used_heap_size + heap.externally_allocated_size > this.#maxHeapBytes ||
      lease.outsideBytes > this.#maxHeapBytes
    ) {
      this.#stats.recycled++;
      this.#retire(lease, 'recycled');
      return;
    }
    this.#idle.push(lease);
    this.#dispatch();
    if (!this.#idle.includes(lease)) return;
    if (this.#live.size > this.#size) {
      lease.idleTimer = setTimeout(() => {
        lease.idleTimer = undefined;
        if (this.#idle.includes(lease) && this.#live.size > this.#size) this.#retire(lease, 'recycled');
      }, this.#extraIdleMs);
      lease.idleTimer.unref();
    }
    // The spare context is made after the caller's result is out; a run that leases the isolate
    // first makes its own.
    const immediate = setImmediate(() => {
      this.#immediates.delete(immediate);
      if (!this.#idle.includes(lease)) return;
      try {
        lease.prepareSpare();
      } catch {
        this.#retire(lease, 'stopped');
      }
    });
    this.#immediates.add(immediate);
  }

  /**
   * Watches the unfinished work of a stopped run: if it has not settled after the grace period,
   * its isolate thread is lost and the pool is degraded.
   */
  watchStopped(work: Promise<unknown>, tenant?: string): void {
    let settled = false;
    const timer = setTimeout(() => {
      this.#zombies.delete(timer);
      if (settled) return;
      this.#stats.abandoned++;
      this.#degrade(
        'An isolate thread did not stop after its run was stopped; its memory and thread are lost until the process exits.',
        tenant,
      );
    }, this.#abandonGraceMs);
    this.#zombies.add(timer);
    const done = () => {
      settled = true;
      clearTimeout(timer);
      this.#zombies.delete(timer);
    };
    work.then(done, done);
  }

  stats(): PoolStats {
    let undisposed = 0;
    for (const isolate of this.#created) if (!isolate.isDisposed) undisposed++;
    let contexts = 0;
    for (const lease of this.#live) contexts += lease.contexts;
    return {
      size: this.#size,
      maxIsolates: this.#maxIsolates,
      live: this.#live.size,
      idle: this.#idle.length,
      busy: this.#live.size - this.#idle.length,
      waiting: this.#queue.waiting,
      tenants: this.#queue.waitingByTenant(),
      ...this.#stats,
      contexts,
      ...this.#contextCounters,
      undisposed,
      degraded: this.degraded,
      reasons: [...this.#reasons],
    };
  }

  /** Refuses new leases, fails waiting ones and disposes every isolate, busy ones included. */
  async dispose(): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#queue.drain()) {
      waiter.cleanup?.();
      waiter.reject(new Error('The sandbox pool is shut down.'));
    }
    for (const timer of this.#zombies) clearTimeout(timer);
    this.#zombies.clear();
    clearTimeout(this.#extraCheck);
    this.#extraCheck = undefined;
    for (const immediate of this.#immediates) clearImmediate(immediate);
    this.#immediates.clear();
    for (const lease of [...this.#live]) this.#retire(lease, 'pool');
  }

  #create(): IsolateLease {
    let lease: IsolateLease | undefined;
    const snapshot = this.#useSnapshot ? contextSnapshot() : null;
    const isolate = new ivm.Isolate({
      memoryLimit: this.memoryMb,
      ...(snapshot ? { snapshot } : {}),
      onCatastrophicError: (message: string) => {
        this.#stats.catastrophic++;
        this.#degrade(`isolated-vm reported a catastrophic error: ${message}`, lease?.tenant || undefined);
        if (!lease) return;
        lease.catastrophe = message;
        lease.onCatastrophe?.(message);
      },
    });
    this.#created.add(isolate);
    try {
      lease = new IsolateLease(
        isolate,
        snapshot !== null,
        this.bounds,
        this.#sharedContexts,
        this.#maxContexts,
        this.#contextBudget,
        this.#contextCounters,
      );
    } catch (error) {
      isolate.dispose();
      throw error;
    }
    this.#stats.created++;
    this.#live.add(lease);
    return lease;
  }

  #retire(lease: IsolateLease, cause: Exclude<DisposeCause, null>): void {
    if (!this.#live.delete(lease)) return;
    const at = this.#idle.indexOf(lease);
    if (at >= 0) this.#idle.splice(at, 1);
    lease.dispose(cause);
    if (lease.isolate.isDisposed) this.#created.delete(lease.isolate);
    clearTimeout(lease.idleTimer);
    this.#stats.retired++;
    // A waiting run takes the freed place.
    this.#dispatch();
  }

  /** Records why the pool is degraded; `onDegraded` hears of each reason once, and of every blamed tenant. */
  #degrade(reason: string, tenant: string | undefined): void {
    const known = this.#reasons.includes(reason);
    if (!known) this.#reasons.push(reason);
    if (!known || tenant !== undefined) this.#onDegraded?.(reason, tenant);
  }
}
