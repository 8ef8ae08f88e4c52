/**
 * Group commit: the runner's per-node writes and the control plane's execution creates. Writing
 * each item with its own statement (and transaction) costs a round trip per item, which was most
 * of the runner's and PostgreSQL's time (docs/benchmarks.md). A Batcher gathers the items
 * submitted while earlier flushes are in progress and writes them together. With nothing in
 * flight an item is written at the end of the current tick, so an idle process adds no delay;
 * under load, batches grow by themselves.
 *
 * Each item's promise settles with its own result once its batch is durable: a caller still waits
 * for its own write (a node's outcome before the next node starts; a create before its answer).
 */
export interface BatcherOptions<I, O> {
  /** Writes `items` in one statement; returns one result per item, in order. */
  flush: (items: I[]) => Promise<O[]>;
  /** Most items per flush. */
  maxBatch: number;
  /** Most flushes in progress at once (each holds a pool connection). */
  maxInFlight: number;
}

interface Pending<I, O> {
  item: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

export class Batcher<I, O> {
  readonly #options: BatcherOptions<I, O>;
  #queue: Array<Pending<I, O>> = [];
  #inFlight = 0;
  #scheduled = false;

  constructor(options: BatcherOptions<I, O>) {
    this.#options = {
      ...options,
      maxBatch: Math.max(1, options.maxBatch),
      maxInFlight: Math.max(1, options.maxInFlight),
    };
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#scheduled || this.#inFlight >= this.#options.maxInFlight || this.#queue.length === 0) return;
    this.#scheduled = true;
    // Flushed after this turn of the event loop: the results that arrived in the same turn (one
    // message each from the code workers, one per request) share the batch. A microtask would
    // write each message's item alone whenever nothing is in flight.
    setImmediate(() => {
      this.#scheduled = false;
      this.#drain();
    });
  }

  #drain(): void {
    while (this.#inFlight < this.#options.maxInFlight && this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#options.maxBatch);
      this.#inFlight++;
      void this.#write(batch);
    }
  }

  async #write(batch: Array<Pending<I, O>>): Promise<void> {
    try {
      const results = await this.#options.flush(batch.map((pending) => pending.item));
      if (results.length !== batch.length)
        throw new Error(`A batched write returned ${results.length} results for ${batch.length} items.`);
      batch.forEach((pending, at) => pending.resolve(results[at] as O));
    } catch (error) {
      for (const pending of batch) pending.reject(error);
    } finally {
      this.#inFlight--;
      this.#schedule();
    }
  }
}
