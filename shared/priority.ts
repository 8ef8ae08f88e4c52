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
 *
 * With autogroup scheduling (`/proc/sys/kernel/sched_autogroup_enabled`, on in many distributions'
 * kernels) Linux shares the CPU between sessions first, by each session's autogroup nice value,
 * and only then between a session's threads by theirs: a process that leads a session of its own
 * (a systemd service, anything started with `setsid`) would get as large a share as the control
 * plane's session however nice its threads. Such a process raises its session's autogroup nice
 * value as well. One that shares its session (`npm start`, a terminal) leaves it alone: raising
 * it would lower everyone else's in the session too, the control plane's under `npm start`.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
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
  /**
   * The autogroup nice value of this process's session afterwards, when the process leads its
   * session and the kernel has autogroups; otherwise null (nothing was changed).
   */
  autogroup: number | null;
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
  return { nice: getPriority(0), raised, autogroup: yieldAutogroup(nice) };
}

/**
 * Gives this process's threads (and its session's autogroup, when it leads the session) the
 * default priority back, where the process may (root, or CAP_SYS_NICE; otherwise nothing changes):
 * a runner that stops has a bounded drain to finish (the nodes in flight handed back, its
 * registration closed) within its grace, and on a host whose cores are taken by work of a higher
 * priority a yielding runner would run out of that grace and leave its executions to their leases.
 * Returns the threads whose value was lowered.
 */
export function reclaimCpu(): number {
  let lowered = 0;
  for (const thread of threadIds()) {
    try {
      if (getPriority(thread) <= 0) continue;
      setPriority(thread, 0);
      lowered++;
    } catch {
      // Not permitted (an unprivileged process), or the thread ended: it keeps its value.
    }
  }
  if (process.platform === 'linux') {
    try {
      if (sessionOf(readFileSync('/proc/self/stat', 'utf8')) === process.pid)
        writeFileSync('/proc/self/autogroup', '0');
    } catch {
      // Not permitted: the session keeps its value.
    }
  }
  return lowered;
}

/**
 * Raises the autogroup nice value of process `pid`'s session (this process's by default) to
 * `nice` when that process leads the session (so the autogroup holds nothing but it and its
 * children); null when it does not, or without autogroups. Never lowers the value (that needs
 * privilege, as for a thread). Also used for a PostgreSQL backend, each of which leads a session
 * of its own (shared/retention/backend-priority.ts).
 */
export function yieldAutogroup(nice: number, pid: number = process.pid): number | null {
  if (process.platform !== 'linux') return null;
  const file = `/proc/${pid}/autogroup`;
  let current: number;
  try {
    if (sessionOf(readFileSync(`/proc/${pid}/stat`, 'utf8')) !== pid) return null;
    current = autogroupNice(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
  if (current >= nice) return current;
  try {
    writeFileSync(file, String(nice));
    return autogroupNice(readFileSync(file, 'utf8'));
  } catch {
    // Refused (a kernel that rate-limits the change, a security module): the threads' values hold.
    return current;
  }
}

/** The autogroup nice value of process `pid`'s session; null without autogroups or when unreadable. */
export function autogroupNiceOf(pid: number): number | null {
  try {
    return autogroupNice(readFileSync(`/proc/${pid}/autogroup`, 'utf8'));
  } catch {
    return null;
  }
}

/** The session id in a `/proc/<pid>/stat` line (its sixth field; the second, the name, may hold spaces). */
function sessionOf(stat: string): number {
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
}

/** The nice value in `/proc/<pid>/autogroup` (`/autogroup-7 nice 0`). */
function autogroupNice(text: string): number {
  const match = /nice (-?\d+)/.exec(text);
  if (!match) throw new Error(`unexpected autogroup line: ${text}`);
  return Number(match[1]);
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
