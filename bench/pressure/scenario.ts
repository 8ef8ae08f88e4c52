/**
 * One way a hostile tenant presses on a process every tenant shares (the control plane's memory,
 * event loop and pool connections; the model host). bench/pressure.ts runs each scenario, in a
 * child process of its own, beside a quiet tenant's REST calls and prints the quiet tenant's p99, 5xx count and the processes'
 * resident memory before and after, beside the targets (p99 <= 2 x alone + 50 ms, no 5xx,
 * growth <= 100 MiB).
 */
import type { Account } from '../client.ts';
import type { System } from '../system.ts';

/**
 * The part of the system a scenario may use: the API's address and a small pool on its database
 * for fixtures. Scenarios run in a process of their own (bench/pressure/hostile-process.ts), so
 * nothing else of the parent's system object is theirs.
 */
export type HostileSystem = Pick<System, 'apiUrl' | 'sql'>;

/** What a scenario may use: the system it presses on and a hostile account of its own. */
export interface PressureContext {
  readonly system: HostileSystem;
  /** A signed-in account for the hostile tenant (its own organization is the scenario's to make). */
  readonly hostile: Account;
  /** Progress lines to stderr. */
  readonly log: (message: string) => void;
}

export interface PressureScenario {
  /** The row's label: what the hostile tenant does, e.g. "cron checks in America/New_York". */
  readonly name: string;
  /** Fixtures made before the quiet tenant is measured (untimed). */
  prepare?(ctx: PressureContext): Promise<void>;
  /**
   * Presses until `signal` aborts, then settles every request it started (refusals such as 429 or
   * 409 are expected and not errors) and resolves.
   */
  run(ctx: PressureContext, signal: AbortSignal): Promise<void>;
}
