/**
 * Counts per key in fixed one-minute windows, kept in this control plane's memory (with several
 * control planes each counts on its own). At most MAX_KEYS keys are remembered, the least recently
 * counted forgotten first, so a flood of distinct keys (made-up trigger ids) costs bounded memory.
 */
const WINDOW_MS = 60_000;
const MAX_KEYS = 100_000;

export class RateWindows {
  readonly #max: number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  /** `max` per key per minute; 0 never refuses. */
  constructor(max: number) {
    this.#max = max;
  }

  /** Seconds until `key` may be counted again, or 0 when it may now (nothing is counted). */
  blockedFor(key: string, now = Date.now()): number {
    const window = this.#windows.get(key);
    if (this.#max === 0 || !window || window.count < this.#max || now - window.start >= WINDOW_MS) return 0;
    return Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
  }

  /** Counts one for `key`; returns the seconds to wait instead when its window is full (nothing counted). */
  take(key: string, now = Date.now()): number {
    const wait = this.blockedFor(key, now);
    if (wait > 0 || this.#max === 0) return wait;
    let window = this.#windows.get(key);
    if (!window || now - window.start >= WINDOW_MS) window = { start: now, count: 0 };
    window.count++;
    // Re-inserted at the end: Map order is the eviction order.
    this.#windows.delete(key);
    this.#windows.set(key, window);
    if (this.#windows.size > MAX_KEYS) this.#windows.delete(this.#windows.keys().next().value!);
    return 0;
  }
}

/**
 * A bounded map from key to value, the least recently set forgotten first: the organization of
 * each trigger seen, so the organization's throttle is asked before the database on the next
 * request (a trigger never changes organization).
 */
export class BoundedMap<V> {
  readonly #entries = new Map<string, V>();
  readonly #max: number;

  constructor(max = MAX_KEYS) {
    this.#max = max;
  }

  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value!);
  }
}
