/**
 * Keeps the runner's engine worker threads told which organizations are cooled down
 * (shared/sandbox/cooldowns.ts): it reads the active cool-downs every `everyMs` (strikes recorded
 * by other runners included) and right after recording a strike of its own, and broadcasts them,
 * so a cooled-down organization's code runs fail at once on every runner within seconds.
 */
import type { Db } from '../../shared/db/db.ts';
import { startPeriodic, type Periodic } from '../../shared/periodic.ts';
import { activeCooldowns, recordStrike, type Cooldown } from '../../shared/sandbox/cooldowns.ts';

export interface CooldownKeeperOptions {
  db: Db;
  everyMs: number;
  /** Sends the cooled-down organizations, each with the end of its cool-down (epoch ms), to the workers. */
  broadcast(until: Record<string, number>): void;
  onStrike(cooldown: Cooldown): void;
  onError(error: unknown): void;
}

export class CooldownKeeper {
  readonly #o: CooldownKeeperOptions;
  #periodic: Periodic | undefined;

  constructor(options: CooldownKeeperOptions) {
    this.#o = options;
  }

  start(): void {
    this.#periodic ??= startPeriodic(() => this.refresh(), {
      everyMs: this.#o.everyMs,
      firstMs: 0,
      onError: this.#o.onError,
    });
  }

  async stop(): Promise<void> {
    await this.#periodic?.stop();
  }

  /** Records a strike against `orgId`, then broadcasts the cool-downs at once. Never throws. */
  strike(orgId: string, reason: string): void {
    void (async () => {
      const cooldown = await recordStrike(this.#o.db, orgId, reason);
      if (cooldown) this.#o.onStrike(cooldown);
      await this.refresh();
    })().catch(this.#o.onError);
  }

  async refresh(): Promise<void> {
    const until: Record<string, number> = {};
    for (const cooldown of await activeCooldowns(this.#o.db)) until[cooldown.orgId] = cooldown.until.getTime();
    this.#o.broadcast(until);
  }
}
