/**
 * How many outside calls are in flight at once: at most `perOrg` of one organization and `total`
 * of all. A call past its organization's bound waits (first come, first served) for one of that
 * organization's calls to end, so one organization's calls never take another's place; the
 * wait counts toward the call's own timeout. One gate serves a whole process or thread: the
 * bound is on the sockets that process opens.
 */

/** A slot held; `release` is idempotent. */
export interface EgressSlot {
  release(): void;
}

interface Waiter {
  orgId: string;
  grant: (slot: EgressSlot) => void;
}

/** Counts of the calls in flight and waiting (for tests and metrics). */
export interface EgressGateCounts {
  inFlight: number;
  waiting: number;
  byOrg: Record<string, { inFlight: number; waiting: number }>;
}

/** The concurrency bound of outside calls of one process or thread. */
export class EgressGate {
  readonly perOrg: number;
  readonly total: number;
  #inFlight = 0;
  readonly #byOrg = new Map<string, number>();
  /** Waiters in arrival order; a waiter leaves when granted or aborted. */
  readonly #waiting: Waiter[] = [];

  constructor(bounds: { perOrg: number; total: number }) {
    this.perOrg = Math.max(1, bounds.perOrg);
    this.total = Math.max(this.perOrg, bounds.total);
  }

  /**
   * A slot for one call of `orgId`, at once when both bounds allow it, else when they do.
   * Rejects with `signal.reason` when `signal` aborts first.
   */
  acquire(orgId: string, signal?: AbortSignal): Promise<EgressSlot> {
    signal?.throwIfAborted();
    if (this.#fits(orgId)) return Promise.resolve(this.#take(orgId));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        orgId,
        grant: (slot) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(slot);
        },
      };
      const onAbort = () => {
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
        reject(signal!.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** The calls in flight and waiting now. */
  counts(): EgressGateCounts {
    const byOrg: EgressGateCounts['byOrg'] = {};
    for (const [org, n] of this.#byOrg) byOrg[org] = { inFlight: n, waiting: 0 };
    for (const w of this.#waiting) (byOrg[w.orgId] ??= { inFlight: 0, waiting: 0 }).waiting += 1;
    return { inFlight: this.#inFlight, waiting: this.#waiting.length, byOrg };
  }

  #fits(orgId: string): boolean {
    return this.#inFlight < this.total && (this.#byOrg.get(orgId) ?? 0) < this.perOrg;
  }

  #take(orgId: string): EgressSlot {
    this.#inFlight += 1;
    this.#byOrg.set(orgId, (this.#byOrg.get(orgId) ?? 0) + 1);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        this.#inFlight -= 1;
        const left = (this.#byOrg.get(orgId) ?? 1) - 1;
        if (left === 0) this.#byOrg.delete(orgId);
        else this.#byOrg.set(orgId, left);
        this.#grantWaiting();
      },
    };
  }

  /** Grants the earliest waiters that now fit; a waiter of a full organization lets later ones of others pass. */
  #grantWaiting(): void {
    for (let i = 0; i < this.#waiting.length && this.#inFlight < this.total;) {
      const waiter = this.#waiting[i]!;
      if (this.#fits(waiter.orgId)) {
        this.#waiting.splice(i, 1);
        waiter.grant(this.#take(waiter.orgId));
      } else i += 1;
    }
  }
}
