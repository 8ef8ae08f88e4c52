/**
 * Start-time fair queueing of sandbox runs by tenant (the execution's organization). Each tenant
 * is a flow with a virtual time: the isolate time (wall-clock milliseconds an isolate was held)
 * its runs have used, counted from when it last became active. When an isolate frees, the waiting
 * run of the tenant with the smallest virtual time goes next, its runs in progress counted up to
 * now, so a tenant whose runs hold isolates long falls behind one whose runs are short, and a
 * tenant that just arrived goes first. A flow that becomes active starts at the virtual clock (the
 * virtual time of the last run dispatched), never below it: idling earns no credit to spend later.
 *
 * Guarantee (docs/sandbox.md, "Fair share"): among tenants with waiting runs, each gets an equal
 * share of isolate time over any interval in which they all keep runs waiting, to within one run
 * of each; a tenant alone may use every isolate.
 */

/** Flows kept when a new tenant arrives, past which idle ones are forgotten with their debt. */
const MAX_IDLE_FLOWS = 4096;

interface Flow<W> {
  /** Isolate milliseconds used by finished runs, offset to the virtual clock on activation. */
  vtime: number;
  readonly waiters: W[];
  /** Runs holding an isolate now. */
  busy: number;
  /** Sum of the start times (performance.now()) of the runs holding an isolate, to charge them up to now. */
  startedSum: number;
}

export class FairQueue<W> {
  readonly #flows = new Map<string, Flow<W>>();
  #vclock = 0;
  #waiting = 0;

  /** Waiting runs of every tenant. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Runs of `tenant` holding an isolate now. */
  busy(tenant: string): number {
    return this.#flows.get(tenant)?.busy ?? 0;
  }

  enqueue(tenant: string, waiter: W): void {
    this.#flow(tenant).waiters.push(waiter);
    this.#waiting++;
  }

  /** Takes a waiter out of the queue (its run was aborted); false when it was not waiting. */
  remove(tenant: string, waiter: W): boolean {
    const flow = this.#flows.get(tenant);
    const at = flow ? flow.waiters.indexOf(waiter) : -1;
    if (!flow || at < 0) return false;
    flow.waiters.splice(at, 1);
    this.#waiting--;
    this.#forget(tenant, flow);
    return true;
  }

  /**
   * The next waiter to serve: of the tenants with waiting runs for which `eligible` holds, the one
   * with the least virtual time (its runs in progress charged up to `now`); ties go to the tenant
   * that has waited longest in map order. Undefined when no eligible tenant waits.
   *
   * `prefer` (with `slackMs`) trades a little fairness for locality: a tenant it accepts (one whose
   * context the freed isolate keeps) is served instead of the fairest one when its virtual time is
   * at most `slackMs` behind, so the lag any tenant can suffer stays bounded by the slack.
   */
  dequeue(
    eligible: (tenant: string, busy: number) => boolean,
    now = performance.now(),
    prefer?: (tenant: string) => boolean,
    slackMs = 0,
  ): { tenant: string; waiter: W } | undefined {
    let best: [string, Flow<W>] | undefined;
    let bestTime = Infinity;
    let near: [string, Flow<W>] | undefined;
    let nearTime = Infinity;
    for (const entry of this.#flows) {
      const flow = entry[1];
      if (flow.waiters.length === 0 || !eligible(entry[0], flow.busy)) continue;
      const time = flow.vtime + flow.busy * now - flow.startedSum;
      if (time < bestTime) {
        best = entry;
        bestTime = time;
      }
      if (prefer && time < nearTime && prefer(entry[0])) {
        near = entry;
        nearTime = time;
      }
    }
    if (near && nearTime <= bestTime + slackMs) best = near;
    if (!best) return undefined;
    const [tenant, flow] = best;
    const waiter = flow.waiters.shift() as W;
    this.#waiting--;
    this.#vclock = Math.max(this.#vclock, flow.vtime);
    return { tenant, waiter };
  }

  /** A run of `tenant` took an isolate at `now`. */
  started(tenant: string, now = performance.now()): void {
    const flow = this.#flow(tenant);
    flow.busy++;
    flow.startedSum += now;
  }

  /** A run of `tenant` that started at `startedAt` gave its isolate back at `now`. */
  finished(tenant: string, startedAt: number, now = performance.now()): void {
    const flow = this.#flows.get(tenant);
    if (!flow || flow.busy === 0) return;
    flow.busy--;
    flow.startedSum -= startedAt;
    flow.vtime += Math.max(0, now - startedAt);
    this.#forget(tenant, flow);
  }

  /** Waiting runs by tenant, for the operations API. */
  waitingByTenant(): Array<{ tenant: string; waiting: number; busy: number }> {
    const rows: Array<{ tenant: string; waiting: number; busy: number }> = [];
    for (const [tenant, flow] of this.#flows)
      if (flow.waiters.length > 0 || flow.busy > 0)
        rows.push({ tenant, waiting: flow.waiters.length, busy: flow.busy });
    return rows;
  }

  /** Drains every waiter (shutdown). */
  drain(): W[] {
    const all: W[] = [];
    for (const flow of this.#flows.values()) all.push(...flow.waiters.splice(0));
    this.#waiting = 0;
    return all;
  }

  #flow(tenant: string): Flow<W> {
    let flow = this.#flows.get(tenant);
    if (!flow) {
      if (this.#flows.size >= MAX_IDLE_FLOWS) this.#prune();
      flow = { vtime: this.#vclock, waiters: [], busy: 0, startedSum: 0 };
      this.#flows.set(tenant, flow);
    } else if (flow.busy === 0 && flow.waiters.length === 0) {
      flow.vtime = Math.max(flow.vtime, this.#vclock);
    }
    return flow;
  }

  /** Forgets idle flows kept for their debt, so a stream of one-off tenants cannot grow the map. */
  #prune(): void {
    for (const [tenant, flow] of this.#flows)
      if (flow.busy === 0 && flow.waiters.length === 0) this.#flows.delete(tenant);
  }

  /**
   * Drops an idle flow once it owes nothing (its virtual time is not ahead of the clock), so the
   * map holds only tenants with work or with recent debt. A flow kept for its debt is dropped when
   * it next goes idle behind the clock.
   */
  #forget(tenant: string, flow: Flow<W>): void {
    if (flow.busy === 0 && flow.waiters.length === 0 && flow.vtime <= this.#vclock) this.#flows.delete(tenant);
  }
}
