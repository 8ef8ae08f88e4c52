/**
 * The runner's CPU priority. A runner yields the CPU to the processes it shares a host with — the
 * control plane's API calls and PostgreSQL — by raising its own nice value: when the cores are
 * scarce, API calls are answered first and executions wait a moment in their durable queue, where
 * they are then taken and written in larger batches. With cores to spare, a nice value changes
 * nothing. docs/architecture.md ("CPU priority") has the measurements.
 *
 * Linux keeps a nice value per thread, and a thread starts with its creator's: the threads that
 * exist when this runs (V8's platform threads) are reniced one by one, and every thread started
 * later (the engine workers, isolated-vm's threads) inherits the value from the main thread.
 */
import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/** The highest nice value (the lowest priority) the kernel accepts. */
export const MAX_NICE = 19;

/**
 * The nice value of the control plane's model processes (the model host that runs `run_model`,
 * and the processes that open uploaded models): CPU-bound work a tenant chooses the size of,
 * which waits while the control plane answers and PostgreSQL serves it (docs/operations.md, "What
 * one tenant can do to the others"). The runner's default nice value.
 */
export const MODEL_PROCESS_NICE = 10;

export interface PriorityResult {
  /** The main thread's nice value afterwards. */
  nice: number;
  /** Threads whose nice value was raised. */
  raised: number;
}

/**
 * Raises the nice value of every thread of this process to `nice` (0–19). A thread already at
 * `nice` or above keeps its own (an operator's `nice -n 10 npm run runner` stays in force): only
 * privileged processes may lower a nice value, and this never asks to.
 */
export function yieldCpu(nice: number): PriorityResult {
  if (!Number.isInteger(nice) || nice < 0 || nice > MAX_NICE)
    throw new RangeError(`A nice value is an integer from 0 to ${MAX_NICE}, got ${nice}.`);
  let raised = 0;
  for (const thread of threadIds()) {
    try {
      if (getPriority(thread) >= nice) continue;
      setPriority(thread, nice);
      raised++;
    } catch {
      // The thread ended between the listing and the call.
    }
  }
  return { nice: getPriority(0), raised };
}

/**
 * This process's thread ids on Linux; elsewhere 0, which names the whole process on the systems
 * whose nice value is per process.
 */
function threadIds(): number[] {
  if (process.platform !== 'linux') return [0];
  try {
    return readdirSync('/proc/self/task')
      .map(Number)
      .filter((id) => Number.isInteger(id) && id > 0);
  } catch {
    return [0];
  }
}
