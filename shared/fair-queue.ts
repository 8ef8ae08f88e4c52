/**
 * Work of many tenants sharing few slots, taken in turns: at most `concurrency` tasks run at once,
 * at most `perKey` of one key (an organization), and a freed slot goes to the next key in
 * round-robin order that has work waiting, so a tenant that queues a hundred tasks delays another
 * tenant's one task by at most one task per slot, not by a hundred.
 */
export interface FairQueueOptions {
  /** Tasks running at once, all keys together. */
  concurrency: number;
  /** Tasks of one key running at once. */
  perKey: number;
  /** Tasks of one key waiting at once; past it `run` refuses with a QueueFullError. */
  maxWaitingPerKey: number;
}

/** A key already has `maxWaitingPerKey` tasks waiting. */
export class QueueFullError extends Error {
  readonly waiting: number;

  constructor(waiting: number) {
    super(`${waiting} tasks of this organization are already waiting`);
    this.waiting = waiting;
    this.name = 'QueueFullError';
  }
}

interface Lane {
  running: number;
  waiting: Array<() => void>;
}

export class FairQueue {
  readonly #options: FairQueueOptions;
  /** Keys with running or waiting tasks, in turn order (a Map keeps insertion order). */
  readonly #lanes = new Map<string, Lane>();
  #running = 0;

  constructor(options: FairQueueOptions) {
    this.#options = options;
  }

  /** Runs `task` in `key`'s turn; its result or error is the returned promise's. */
  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    let lane = this.#lanes.get(key);
    if (lane === undefined) {
      lane = { running: 0, waiting: [] };
      this.#lanes.set(key, lane);
    }
    if (this.#running < this.#options.concurrency && lane.running < this.#options.perKey && lane.waiting.length === 0) {
      this.#start(key, lane);
    } else {
      if (lane.waiting.length >= this.#options.maxWaitingPerKey) throw new QueueFullError(lane.waiting.length);
      await new Promise<void>((resolve) => lane.waiting.push(resolve));
    }
    try {
      return await task();
    } finally {
      lane.running--;
      this.#running--;
      if (lane.running === 0 && lane.waiting.length === 0) this.#lanes.delete(key);
      this.#next();
    }
  }

  /** Tasks waiting, all keys together. */
  get waiting(): number {
    let n = 0;
    for (const lane of this.#lanes.values()) n += lane.waiting.length;
    return n;
  }

  #start(key: string, lane: Lane): void {
    lane.running++;
    this.#running++;
    // The key goes to the back of the turn order.
    this.#lanes.delete(key);
    this.#lanes.set(key, lane);
  }

  /** Hands free slots to waiting keys, round-robin. */
  #next(): void {
    let progress = true;
    while (this.#running < this.#options.concurrency && progress) {
      progress = false;
      for (const [key, lane] of this.#lanes) {
        if (lane.waiting.length === 0 || lane.running >= this.#options.perKey) continue;
        const resolve = lane.waiting.shift()!;
        this.#start(key, lane);
        resolve();
        progress = true;
        break;
      }
    }
  }
}
