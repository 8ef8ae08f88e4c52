/**
 * A retry delay that doubles with each failure up to a bound and starts over after a success: the
 * one rule of the service's retries of its own parts (a LISTEN connection reopened, the embedded
 * PostgreSQL restarted, a sandbox child or a supervised process that dies young replaced). The
 * client package (client/) keeps its reconnect delay to itself: it imports nothing of the service.
 */
export class Backoff {
  readonly #minMs: number;
  readonly #maxMs: number;
  #nextMs: number;

  constructor(bounds: { minMs: number; maxMs: number }) {
    this.#minMs = bounds.minMs;
    this.#maxMs = Math.max(bounds.minMs, bounds.maxMs);
    this.#nextMs = this.#minMs;
  }

  /** The delay before the next try; the one after it is twice as long, up to the bound. */
  next(): number {
    const wait = this.#nextMs;
    this.#nextMs = Math.min(wait * 2, this.#maxMs);
    return wait;
  }

  /** After a success: the next failure waits the least again. */
  reset(): void {
    this.#nextMs = this.#minMs;
  }
}
