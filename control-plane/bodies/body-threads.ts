/**
 * The body threads: a small piscina pool that reads the command route's large JSON bodies off the
 * event loop (docs/operations.md, "What one tenant can do to the others"). Reading, guarding and
 * checking a body of several MiB, and encoding what its SQL needs, took the event loop tens to
 * hundreds of milliseconds per body, during which every other tenant's request waited.
 *
 * Only bodies the heavy-work gate admitted (control-plane/plugins/heavy-work.ts: `HEAVY_BODY_BYTES`
 * and more) come here, so the pool's queue is bounded by that admission: at most
 * `HEAVY_BYTES_IN_FLIGHT` bytes of bodies, a few per account and per address. Smaller bodies stay
 * on the event loop, where reading 256 KiB costs about a millisecond, less than the hop to a
 * thread and back. The bytes are transferred to the thread and its results transferred back.
 */
import { Piscina } from 'piscina';
import { ServiceError } from '../../shared/errors.ts';
import type { BodyResult, BodyTask } from './body-messages.ts';

/**
 * Tasks waiting for a thread, at most: a backstop, since admission already bounds them (by bytes
 * in flight, per account and per address); past it a body is refused like an unadmitted one.
 */
const MAX_WAITING = 1024;
/** The young generation of a body thread, at most (V8's semi-spaces). */
const YOUNG_GENERATION_MB = 8;
/** piscina's refusal past `maxQueue`. */
const QUEUE_FULL = 'Task queue is at limit';

/** A lazily started pool of `threads` body threads; 0 threads: none, bodies are read on the event loop. */
export class BodyThreads {
  readonly #threads: number;
  readonly #isHeavy: (bytes: number) => boolean;
  #piscina: Piscina<BodyTask, BodyResult> | null = null;
  #closed = false;

  /** `isHeavy`: whether a body of that many bytes is heavy work (HeavyWorkGate.isHeavy). */
  constructor(threads: number, isHeavy: (bytes: number) => boolean) {
    this.#threads = threads;
    this.#isHeavy = isHeavy;
  }

  /** Whether a body of `bytes` is read by a thread. */
  takes(bytes: number): boolean {
    return this.#threads > 0 && !this.#closed && this.#isHeavy(bytes);
  }

  /**
   * Starts the threads now rather than at the first large body (a server starts them with itself:
   * a thread's start takes the event loop a few milliseconds).
   */
  start(): Piscina<BodyTask, BodyResult> | null {
    if (this.#threads === 0 || this.#closed) return null;
    this.#piscina ??= new Piscina<BodyTask, BodyResult>({
      filename: new URL('./body-thread.ts', import.meta.url).href,
      minThreads: this.#threads,
      maxThreads: this.#threads,
      maxQueue: MAX_WAITING,
      idleTimeout: Number.POSITIVE_INFINITY,
      // A thread's young generation otherwise grows to hold whole parsed bodies and stays that
      // large: 30 bodies of 5-7 MB left the process 230 MB larger, 90 MB with this bound.
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    return this.#piscina;
  }

  /** Reads `task.bytes` in a thread; the bytes are transferred (detached here) when they own their buffer. */
  async read(task: BodyTask): Promise<BodyResult> {
    const piscina = this.start();
    if (piscina === null) throw new Error('no body threads');
    const { bytes } = task;
    const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
    try {
      return await piscina.run(task, { transferList: owned ? [bytes.buffer as ArrayBuffer] : [] });
    } catch (error) {
      if (!(error instanceof Error) || error.message !== QUEUE_FULL) throw error;
      const busy = new ServiceError('rate_limited', 'The service is busy with large requests; try again in 1 s.');
      busy.retryAfterSeconds = 1;
      throw busy;
    }
  }

  /** Ends the threads; later bodies are read on the event loop. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#piscina?.destroy();
  }
}
