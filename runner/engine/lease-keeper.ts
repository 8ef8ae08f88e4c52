/**
 * Keeps the leases of the executions a runner works on: every `renewSeconds`, one statement
 * pushes `lease_until` of all of them forward. An execution the statement no longer finds as ours
 * and running was cancelled or taken over (our lease had expired); its `onLost` is called so the
 * work on it stops early (its next guarded write would refuse anyway).
 *
 * A runner that dies stops renewing: its executions become claimable `leaseSeconds` after the
 * last renewal, which bounds how long a crash holds them up.
 */
import type { Queryable } from '../../shared/db/db.ts';
import { startPeriodic, type Periodic } from '../../shared/periodic.ts';

export interface LeaseKeeperOptions {
  db: Queryable;
  runnerId: string;
  leaseSeconds: number;
  renewSeconds: number;
  onError: (error: unknown) => void;
}

export class LeaseKeeper {
  readonly #options: LeaseKeeperOptions;
  readonly #held = new Map<string, () => void>();
  #loop: Periodic | undefined;

  constructor(options: LeaseKeeperOptions) {
    this.#options = options;
  }

  /** Starts renewing. */
  start(): void {
    // Renewal errors are handled inside renew(); onError only hears what escapes it.
    this.#loop ??= startPeriodic(() => this.renew(), {
      everyMs: this.#options.renewSeconds * 1000,
      onError: this.#options.onError,
    });
  }

  /** Renews `executionId` from now on; `onLost` is called once if it stops being ours. */
  hold(executionId: string, onLost: () => void): void {
    this.#held.set(executionId, onLost);
  }

  /**
   * Stops renewing `executionId` (it ended, parked, was handed back or given up) if `onLost` is
   * still its hold: a hold taken again since (the execution woke and was claimed again) stays.
   */
  release(executionId: string, onLost: () => void): void {
    if (this.#held.get(executionId) === onLost) this.#held.delete(executionId);
  }

  /** How many executions are being renewed. */
  get size(): number {
    return this.#held.size;
  }

  /** Stops renewing everything (after the last renewal in progress). Leases then run out on their own. */
  async stop(): Promise<void> {
    await this.#loop?.stop();
    this.#loop = undefined;
  }

  /** One renewal of every held lease (also called by tests). */
  async renew(): Promise<void> {
    // Snapshot the holds: one released and held again while the statement runs (a sleep that
    // ended and was claimed again) is a new hold the statement knew nothing of.
    const holds = new Map(this.#held);
    if (holds.size === 0) return;
    try {
      // Locked in id order first, like the step statements and claims: an UPDATE alone takes its
      // rows in whatever order its plan visits them (a bitmap scan: the heap's), and a renewal
      // that locked against a step statement's order could deadlock with it.
      const { rows } = await this.#options.db.query<{ id: string }>(
        `WITH mine AS (
           SELECT id FROM executions
            WHERE id = ANY($1::uuid[]) AND lease_owner = $2::uuid AND status = 'running'
            ORDER BY id FOR NO KEY UPDATE)
         UPDATE executions e SET lease_until = now() + make_interval(secs => $3::int)
           FROM mine WHERE e.id = mine.id
         RETURNING e.id`,
        [[...holds.keys()], this.#options.runnerId, this.#options.leaseSeconds],
      );
      const renewed = new Set(rows.map((row) => row.id));
      for (const [id, onLost] of holds) {
        if (renewed.has(id) || this.#held.get(id) !== onLost) continue;
        this.#held.delete(id);
        onLost();
      }
    } catch (error) {
      // The next renewal retries; until the lease runs out, nothing is lost.
      this.#options.onError(error);
    }
  }
}
