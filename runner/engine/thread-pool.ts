/**
 * The engine's thread pool (piscina): claimed executions are interpreted on its engine threads,
 * node by node, `logic.code` included (./engine-thread.ts), so the main thread's event loop stays
 * free for intake, claims, leases and drains whatever the executions do. runner/messages.ts types
 * what crosses.
 */
import { randomUUID } from 'node:crypto';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { ClaimedExecution } from './claim.ts';
import type { ContextScope } from '../../sandbox/isolate-pool.ts';
import type { WorkerTracingSettings } from '../messages.ts';
import type { OutsideSettings } from '../outside/outside-calls.ts';
import type { SessionGraphBounds } from '../../shared/graph/session-graph-usage.ts';
import type { MemoryBoundPlan } from '../../sandbox/memory-bound.ts';
import {
  RUNNER_FLAG_ABANDONED,
  RUNNER_FLAG_CLOSED,
  RUNNER_FLAG_COUNT,
  RUNNER_FLAG_DRAINING,
  workerNoticeSchema,
  type EngineWorkerData,
  type ExecutionTask,
  type ExecutionTaskResult,
  type WorkerNotice,
  type WorkerSignal,
} from '../messages.ts';

export interface EngineThreadPoolOptions {
  databaseUrl: string;
  /** The runner's id and lease length: what the workers' writes are guarded by. */
  runnerId: string;
  leaseSeconds: number;
  /** The poison bound. */
  maxRecoveries: number;
  /** Executions in flight at once (all threads together). */
  concurrency: number;
  /** Worker threads at most (the runner's default: EngineTuning.workerThreads). */
  threads: number;
  /** Isolates per thread, i.e. concurrent `logic.code` runs per thread (EngineTuning.isolatesPerThread). */
  isolatesPerThread: number;
  /** Heap bound of each isolate in MiB. Default 64. */
  memoryMb?: number;
  /** Whose runs a context serves (sandbox/isolate-pool.ts). Default 'shared'. */
  contexts?: ContextScope;
  /** Connections of each thread's pg pool (step writes, transactions, ctx calls). Default 6. */
  connectionsPerThread?: number;
  /** Degradation reports and errors the workers hid from the executions. */
  onNotice: (notice: WorkerNotice) => void;
  /** Tracing of the workers' executions (each thread exports its own spans); null or absent: off. */
  tracing?: WorkerTracingSettings | null;
  /** Outside calls and credentials of the workers' nodes; null or absent: none. */
  outside?: OutsideSettings | null;
  /** What a session graph may hold (configuration). */
  graphBounds: SessionGraphBounds;
  /** How much of a node run's input and output its event keeps (NODE_RUN_VALUE_BYTES). */
  nodeRunValueBytes: number;
}

/** How long an idle extra thread lives before piscina ends it (its isolates and connections go with it). */
const IDLE_THREAD_MS = 60_000;
/** How long `destroy()` waits for runs to end after their isolates were stopped. */
const CLOSE_WAIT_MS = 2_000;
/**
 * Then how long it leaves isolated-vm to finish tearing the stopped isolates down: a worker thread
 * terminated in the middle of that aborts the process (measured: ~10 % of immediate terminations,
 * none after 100 ms).
 */
const SETTLE_MS = 250;

/** A piscina pool of engine threads. Nothing starts until `start()`. */
export class EngineThreadPool {
  readonly #options: EngineThreadPoolOptions;
  #piscina: Piscina<ExecutionTask, ExecutionTaskResult> | null = null;
  #channel: BroadcastChannel | null = null;
  /** EngineWorkerData.flags: what every thread reads, however late it opened its channel. */
  readonly #flags = new Int32Array(new SharedArrayBuffer(RUNNER_FLAG_COUNT * Int32Array.BYTES_PER_ELEMENT));
  readonly #running = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: EngineThreadPoolOptions) {
    this.#options = options;
  }

  /** Starts one warm thread; more start as work arrives, up to `threads`. Their sandbox children are bounded by `memoryBound`. */
  start(memoryBound: MemoryBoundPlan): void {
    if (this.#piscina || this.#closed) return;
    const options = this.#options;
    const isolates = Math.max(1, options.isolatesPerThread);
    const threads = Math.max(1, options.threads);
    const channel = `runner-workers-${randomUUID()}`;
    const workerData: EngineWorkerData = {
      databaseUrl: options.databaseUrl,
      runnerId: options.runnerId,
      leaseSeconds: options.leaseSeconds,
      maxRecoveries: options.maxRecoveries,
      connections: Math.max(2, options.connectionsPerThread ?? 6),
      isolates,
      memoryMb: options.memoryMb ?? 64,
      contexts: options.contexts ?? 'shared',
      channel,
      flags: this.#flags.buffer as SharedArrayBuffer,
      memoryBound,
      tracing: options.tracing ?? null,
      outside: options.outside ?? null,
      graphBounds: options.graphBounds,
      nodeRunValueBytes: options.nodeRunValueBytes,
    };
    this.#channel = new BroadcastChannel(channel);
    this.#channel.unref();
    const piscina = new Piscina<ExecutionTask, ExecutionTaskResult>({
      filename: new URL('./engine-thread.ts', import.meta.url).href,
      minThreads: 1,
      maxThreads: threads,
      // An execution task lasts as long as the execution stays on this runner (mostly waiting on
      // its writes and its code): every execution in flight must fit, or piscina would queue
      // claimed executions behind others. The isolate pool bounds concurrent code runs.
      concurrentTasksPerWorker: Math.ceil(Math.max(1, options.concurrency) / threads) + isolates,
      idleTimeout: IDLE_THREAD_MS,
      // Idle workers must keep their event loop running (pg pool, batcher, isolate pool
      // housekeeping, signals): piscina's default parks them in Atomics.wait between tasks.
      atomics: 'disabled',
      workerData,
    });
    piscina.on('message', (message: unknown) => {
      const notice = workerNoticeSchema.safeParse(message);
      if (notice.success) options.onNotice(notice.data);
    });
    // A worker that throws outside a task dies; piscina replaces it. Its tasks reject.
    piscina.on('error', (error: unknown) =>
      options.onNotice({ type: 'host_error', message: error instanceof Error ? error.message : String(error) }),
    );
    this.#piscina = piscina;
  }

  #run(task: ExecutionTask): Promise<ExecutionTaskResult> {
    if (!this.#piscina) return Promise.reject(new Error('The worker pool is not running.'));
    const run = this.#piscina.run(task);
    const tracked = run
      .then(
        () => {},
        () => {},
      )
      .finally(() => this.#running.delete(tracked));
    this.#running.add(tracked);
    return run;
  }

  /**
   * Interprets a claimed execution on a worker until it leaves this runner. Rejects only when the
   * worker died or the pool was destroyed under it.
   */
  execute(execution: ClaimedExecution): Promise<ExecutionTaskResult> {
    return this.#run({ type: 'execution', execution });
  }

  /** Tells every worker what the runner decided (see WorkerSignal). */
  signal(signal: WorkerSignal): void {
    // The runner-wide decisions are stored first: a thread that opens its channel after the
    // broadcast never receives it, but reads them before it writes anything.
    if (signal.type === 'dead' && signal.executionIds === 'all') Atomics.store(this.#flags, RUNNER_FLAG_ABANDONED, 1);
    if (signal.type === 'drain') Atomics.store(this.#flags, RUNNER_FLAG_DRAINING, 1);
    if (signal.type === 'close') Atomics.store(this.#flags, RUNNER_FLAG_CLOSED, 1);
    this.#channel?.postMessage(signal);
  }

  /**
   * Ends every worker thread: first each worker stops its isolates (runs in progress end with
   * `internal_error`), then, once those runs are back or after a short wait, the threads go.
   */
  async destroy(): Promise<void> {
    this.#closed = true;
    const piscina = this.#piscina;
    this.#piscina = null;
    if (!piscina) return;
    this.signal({ type: 'close' });
    this.#channel?.close();
    this.#channel = null;
    // Timers kept referenced: a process that exited while the workers tear down would abort.
    let timer: NodeJS.Timeout | undefined;
    const wait = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_WAIT_MS);
    });
    await Promise.race([Promise.all(this.#running), wait]);
    clearTimeout(timer);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    await piscina.destroy();
  }
}
