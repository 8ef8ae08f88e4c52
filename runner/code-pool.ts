/**
 * The runner's code worker threads (piscina): `logic.code` runs leave the main thread, whose event
 * loop stays free for claiming, persisting and renewing leases whatever the code does.
 * runner/code-worker.ts is the worker; runner/messages.ts types what crosses.
 */
import { randomUUID } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { BroadcastChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { workerNoticeSchema, type CodePoolSignal, type CodeRunner, type CodeTask, type CodeTaskResult, type CodeWorkerData, type WorkerNotice } from './messages.ts';

export interface CodePoolOptions {
  databaseUrl: string;
  /** Worker threads at most. Default: the CPU count, between 1 and 4. */
  threads?: number;
  /** Isolates per thread, i.e. concurrent runs per thread. Default 2. */
  isolatesPerThread?: number;
  /** Heap bound of each isolate in MiB. Default 64. */
  memoryMb?: number;
  /** Degradation reports and hidden host errors from the workers. */
  onNotice: (notice: WorkerNotice) => void;
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

/** A piscina pool of code workers. Nothing starts until `start()`. */
export class CodePool implements CodeRunner {
  readonly #options: CodePoolOptions;
  #piscina: Piscina<CodeTask, CodeTaskResult> | null = null;
  #channel: BroadcastChannel | null = null;
  readonly #running = new Set<Promise<unknown>>();
  #closed = false;

  constructor(options: CodePoolOptions) {
    this.#options = options;
  }

  /** Starts one warm thread; more start as runs arrive, up to `threads`. */
  start(): void {
    if (this.#piscina || this.#closed) return;
    const isolates = Math.max(1, this.#options.isolatesPerThread ?? 2);
    const channel = `code-pool-${randomUUID()}`;
    const workerData: CodeWorkerData = { databaseUrl: this.#options.databaseUrl, isolates, memoryMb: this.#options.memoryMb ?? 64, channel };
    this.#channel = new BroadcastChannel(channel);
    this.#channel.unref();
    const piscina = new Piscina<CodeTask, CodeTaskResult>({
      filename: new URL('./code-worker.ts', import.meta.url).href,
      minThreads: 1,
      maxThreads: Math.max(1, this.#options.threads ?? Math.min(4, availableParallelism())),
      concurrentTasksPerWorker: isolates,
      idleTimeout: IDLE_THREAD_MS,
      // Idle workers must keep their event loop running (pg pool, isolate pool housekeeping):
      // piscina's default parks them in Atomics.wait between tasks.
      atomics: 'disabled',
      workerData,
    });
    piscina.on('message', (message: unknown) => {
      const notice = workerNoticeSchema.safeParse(message);
      if (notice.success) this.#options.onNotice(notice.data);
    });
    // A worker that throws outside a task dies; piscina replaces it. Its runs fail (internal_error).
    piscina.on('error', (error: unknown) => this.#options.onNotice({ type: 'host_error', message: error instanceof Error ? error.message : String(error) }));
    this.#piscina = piscina;
  }

  /** Runs one task on a worker; rejects once the pool is destroyed. */
  run(task: CodeTask): Promise<CodeTaskResult> {
    if (!this.#piscina) return Promise.reject(new Error('The code pool is not running.'));
    const run = this.#piscina.run(task);
    const tracked = run.then(() => {}, () => {}).finally(() => this.#running.delete(tracked));
    this.#running.add(tracked);
    return run;
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
    const signal: CodePoolSignal = { type: 'close' };
    this.#channel?.postMessage(signal);
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
