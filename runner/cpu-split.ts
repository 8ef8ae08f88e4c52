/**
 * Runners on one host split its CPUs between them: each is pinned (every thread, with taskset) to
 * its own share, so a runner's threads hand work to each other on one CPU. Every `logic.code` run
 * wakes an isolate thread (sandbox/sandbox.ts); left to the scheduler, with both CPUs busy the
 * woken thread preempts the other runner's engine thread instead, and two runners on two cores
 * drained a queue no faster than one. Pinned, they drained it 1.2 times as fast at the same CPU
 * per execution (docs/benchmarks.md, "Figures on this machine": 2 runners vs 1).
 *
 * A runner alone on its host keeps every CPU it started with (which respects an outer cpuset, a
 * container's or an operator's `taskset`), and so do runners that outnumber the CPUs: the
 * scheduler balances those better than any fixed share. Runners on one host are those registered
 * with the same host name (shared/runner-registry.ts), ordered by start; each looks again every
 * `everyMs`, so shares follow runners joining and leaving. Linux only; elsewhere nothing happens.
 * A failed `taskset` (none installed) is reported once and ends the splitting.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Queryable } from '../shared/db/db.ts';
import { formatCpuList, ownAllowedCpus, threadCpuLists } from '../shared/cpu-list.ts';
import { startPeriodic, type Periodic } from '../shared/periodic.ts';
import { childPids } from '../shared/proc-stat.ts';
import { ALIVE_WITHIN_SECONDS } from '../shared/runner-registry.ts';

const run = promisify(execFile);

/**
 * The share of `cpus` of the runner at `index` (0-based, by start) of `count` runners on the host:
 * a contiguous slice, all of them when it is alone or when runners outnumber the CPUs.
 */
export function cpuShare(cpus: readonly number[], index: number, count: number): number[] {
  if (count <= 1 || count > cpus.length || index < 0 || index >= count) return [...cpus];
  const from = Math.floor((index * cpus.length) / count);
  const to = Math.floor(((index + 1) * cpus.length) / count);
  return cpus.slice(from, to);
}

export interface CpuSplitOptions {
  db: Queryable;
  host: string;
  runnerId: string;
  everyMs: number;
  /** Told each time this runner sets its CPUs. */
  onChange: (change: { cpus: string; runnersOnHost: number }) => void;
  onError: (error: unknown) => void;
}

/** Starts splitting; null where the process's CPUs cannot be read (not Linux). */
export function startCpuSplit(options: CpuSplitOptions): Periodic | null {
  const hostCpus = ownAllowedCpus();
  if (hostCpus === undefined) return null;
  let unavailable = false;
  const check = async () => {
    if (unavailable) return;
    const { rows } = await options.db.query<{ id: string }>(
      `SELECT id FROM runners
        WHERE host = $1 AND stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => $2::int)
        ORDER BY started_at, id`,
      [options.host, ALIVE_WITHIN_SECONDS],
    );
    const index = rows.findIndex((row) => row.id === options.runnerId);
    if (index < 0) return;
    const wanted = formatCpuList(cpuShare(hostCpus, index, rows.length));
    // Every thread is read, not a list remembered from the last change: a thread started while
    // taskset went through the others keeps the list of the thread that started it. The sandbox
    // child processes (sandbox/sandbox-process.ts), where the code runs, take the same share.
    const pids = [process.pid, ...(await childPids(process.pid))];
    const stale: number[] = [];
    for (const pid of pids) if (!(await threadCpuLists(pid)).every((list) => list === wanted)) stale.push(pid);
    if (stale.length === 0) return;
    try {
      for (const pid of stale) await run('taskset', ['--all-tasks', '--pid', '--cpu-list', wanted, String(pid)]);
    } catch (error) {
      // No taskset (util-linux) on this host, or CPUs taken away from under the process: say so
      // once and leave the CPUs to the scheduler from then on.
      unavailable = true;
      throw error;
    }
    options.onChange({ cpus: wanted, runnersOnHost: rows.length });
  };
  return startPeriodic(check, { everyMs: options.everyMs, firstMs: 0, onError: options.onError });
}
