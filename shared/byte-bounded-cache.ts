/**
 * A least-recently-used map bounded by the bytes its entries hold, not by their number: a cache
 * keyed by what a client sends (a time zone, a cron expression) must not let one tenant grow the
 * process that every tenant shares. Each entry's cost is the caller's estimate of what it keeps
 * alive — its key's characters plus its value, including memory outside the JavaScript heap (an
 * `Intl.DateTimeFormat` holds ≈ 30 KB of ICU data).
 */
export class ByteBoundedCache<V> {
  readonly #maxBytes: number;
  readonly #entries = new Map<string, { value: V; bytes: number }>();
  #bytes = 0;

  /** `maxBytes`: the most the entries may hold together; an entry costlier than that is never kept. */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** The value kept for `key`, now the most recently used; undefined when none is. */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.value;
  }

  /**
   * Keeps `value` for `key` at a cost of `bytes` (plus the key's own two bytes a character),
   * dropping the least recently used entries until the whole fits.
   */
  set(key: string, value: V, bytes: number): void {
    const cost = bytes + key.length * 2;
    this.delete(key);
    if (cost > this.#maxBytes) return;
    while (this.#bytes + cost > this.#maxBytes) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.delete(oldest);
    }
    this.#entries.set(key, { value, bytes: cost });
    this.#bytes += cost;
  }

  /** Forgets `key`. */
  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= entry.bytes;
  }

  /** The bytes the entries hold together, as their costs were given. */
  get bytes(): number {
    return this.#bytes;
  }

  /** How many entries are kept. */
  get size(): number {
    return this.#entries.size;
  }
}
