/**
 * The runner's code worker threads (piscina): `logic.code` runs leave the main thread, whose event
 * loop stays free for claiming, persisting and renewing leases whatever the code does.
 * runner/code-worker.ts is the worker; runner/messages.ts types what crosses.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { workerNoticeSchema, type CodeRunner, type CodeTask, type CodeTaskResult, type CodeWorkerData, type WorkerNotice } from './messages.ts';

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

/** A piscina pool of code workers. Nothing starts until `start()`. */
export class CodePool implements CodeRunner {
  readonly #options: CodePoolOptions;
  #piscina: Piscina<CodeTask, CodeTaskResult> | null = null;
  #closed = false;

  constructor(options: CodePoolOptions) {
    this.#options = options;
  }

  /** Starts one warm thread; more start as runs arrive, up to `threads`. */
  start(): void {
    if (this.#piscina || this.#closed) return;
    const isolates = Math.max(1, this.#options.isolatesPerThread ?? 2);
    const workerData: CodeWorkerData = { databaseUrl: this.#options.databaseUrl, isolates, memoryMb: this.#options.memoryMb ?? 64 };
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
    return this.#piscina.run(task);
  }

  /** Ends every worker thread; runs in progress reject. */
  async destroy(): Promise<void> {
    this.#closed = true;
    const piscina = this.#piscina;
    this.#piscina = null;
    await piscina?.destroy();
  }
}
