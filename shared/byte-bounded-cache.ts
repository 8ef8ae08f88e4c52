import { LRUCache } from 'lru-cache';

/**
 * A least-recently-used map bounded by the bytes its entries hold, not by their number: a cache
 * keyed by what a client sends (a time zone, a cron expression) must not let one tenant grow the
 * process that every tenant shares. Each entry's cost is the caller's estimate of what it keeps
 * alive, its value including memory outside the JavaScript heap (an `Intl.DateTimeFormat` holds
 * ≈ 30 KB of ICU data), plus its key's two bytes a character. lru-cache does the bookkeeping (its
 * `maxSize`; an entry costlier than the whole bound is never kept).
 */
// lru-cache stores any non-nullish value (`{}`): cached numbers are values too.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export class ByteBoundedCache<V extends {}> {
  readonly #cache: LRUCache<string, V>;

  /** `maxBytes`: the most the entries may hold together. */
  constructor(maxBytes: number) {
    this.#cache = new LRUCache<string, V>({ maxSize: maxBytes });
  }

  /** The value kept for `key`, now the most recently used; undefined when none is. */
  get(key: string): V | undefined {
    return this.#cache.get(key);
  }

  /** Keeps `value` for `key` at a cost of `bytes`, dropping the least recently used entries until it fits. */
  set(key: string, value: V, bytes: number): void {
    this.#cache.set(key, value, { size: Math.max(1, bytes + key.length * 2) });
  }

  /** The bytes the entries hold together, as their costs were given. */
  get bytes(): number {
    return this.#cache.calculatedSize;
  }

  /** How many entries are kept. */
  get size(): number {
    return this.#cache.size;
  }
}
