/**
 * A live subscription as an async iterator of events. Events are delivered once each, in id order:
 * anything at or below the last delivered id is dropped, so the pushes after a resubscribe and
 * the listing read to fill the gap may overlap without repeating an event.
 */
import type { EventRecord, SubscribeParams } from './commands.ts';

/** Compares two event ids (strings of digits) numerically. */
export function compareEventIds(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export class Subscription implements AsyncIterable<EventRecord> {
  /** The server's subscription id; changes when the client resubscribes after a reconnect. */
  id: string;
  readonly params: SubscribeParams;
  #lastId: string | null = null;
  #queue: EventRecord[] = [];
  #waiters: Array<{ resolve: (r: IteratorResult<EventRecord>) => void; reject: (e: unknown) => void }> = [];
  #ended = false;
  #failure: unknown = null;
  /** While the gap is being read: pushes wait here, then go through `deliver` after it. */
  #held: EventRecord[] | null = null;
  readonly #unsubscribe: (subscription: Subscription) => Promise<void>;

  constructor(id: string, params: SubscribeParams, unsubscribe: (subscription: Subscription) => Promise<void>) {
    this.id = id;
    this.params = params;
    this.#unsubscribe = unsubscribe;
  }

  /** The id of the last event delivered, or null. */
  get lastEventId(): string | null {
    return this.#lastId;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** A pushed event: held while a gap is being filled, else delivered. */
  push(event: EventRecord): void {
    if (this.#held) this.#held.push(event);
    else this.deliver(event);
  }

  /** Starts holding pushes (the gap is about to be read from the listing). */
  hold(): void {
    this.#held ??= [];
  }

  /** Delivers what was held, in order; pushes flow straight through again. */
  release(): void {
    const held = this.#held ?? [];
    this.#held = null;
    held.sort((a, b) => compareEventIds(a.id, b.id));
    for (const event of held) this.deliver(event);
  }

  /** Hands `event` to the iterator unless it was delivered already. */
  deliver(event: EventRecord): void {
    if (this.#ended) return;
    if (this.#lastId !== null && compareEventIds(event.id, this.#lastId) <= 0) return;
    this.#lastId = event.id;
    const waiter = this.#waiters.shift();
    if (waiter) waiter.resolve({ value: event, done: false });
    else this.#queue.push(event);
  }

  /** Ends the iteration: normally (`failure` undefined) or with an error thrown from `next()`. */
  end(failure?: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#failure = failure ?? null;
    for (const waiter of this.#waiters.splice(0)) {
      if (failure !== undefined) waiter.reject(failure);
      else waiter.resolve({ value: undefined, done: true });
    }
  }

  /** Unsubscribes on the server and ends the iteration. */
  async unsubscribe(): Promise<void> {
    if (this.#ended) return;
    this.end();
    await this.#unsubscribe(this);
  }

  /** The next event (resolves when one arrives). */
  next(): Promise<IteratorResult<EventRecord>> {
    const event = this.#queue.shift();
    if (event) return Promise.resolve({ value: event, done: false });
    if (this.#ended) {
      return this.#failure !== null ? Promise.reject(this.#failure) : Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  [Symbol.asyncIterator](): AsyncIterator<EventRecord> {
    return {
      next: () => this.next(),
      // `break` out of `for await` unsubscribes.
      return: async () => {
        await this.unsubscribe();
        return { value: undefined, done: true };
      },
    };
  }
}
