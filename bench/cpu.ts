/**
 * CPU time per process group during a benchmark phase (Linux /proc): where the time goes between
 * the control plane, the runners, PostgreSQL and the benchmark's own client. On a machine without
 * /proc every figure reads 0.
 */
import { readFile } from 'node:fs/promises';
import type pg from 'pg';
import { cpuShare } from '../runner/cpu-split.ts';
import { formatCpuList, ownAllowedCpus, threadCpuLists } from '../shared/cpu-list.ts';
import { childPids, statFields, threadIds } from '../shared/proc-stat.ts';

export interface CpuSnapshot {
  /** Seconds of CPU (user + system) per group, summed over its processes. */
  seconds: Record<string, number>;
}

// Linux reports /proc times in USER_HZ ticks, 100 per second on every architecture Node runs on.
const TICKS_PER_SECOND = 100;

// Indexes into statFields (stat(5) fields 14–17, minus the three before the state).
const UTIME = 11;
const STIME = 12;
const CUTIME = 13;
const CSTIME = 14;
const PPID = 1;

/** user + system seconds of `pid`; with `children`, also those of its exited, reaped children. */
async function cpuOf(pid: number, children = false): Promise<number> {
  const f = await statFields(pid);
  if (!f) return 0;
  const ticks = Number(f[UTIME]) + Number(f[STIME]) + (children ? Number(f[CUTIME]) + Number(f[CSTIME]) : 0);
  return ticks / TICKS_PER_SECOND;
}

/** The postmaster's pid of the server behind `sql`: the parent of one of its backends. */
export async function postmasterPid(sql: pg.Pool): Promise<number | undefined> {
  const { rows } = await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const f = await statFields(rows[0]!.pid);
  return f ? Number(f[PPID]) : undefined;
}

/**
 * A snapshot of CPU seconds: `groups` maps a name to the pids counted under it, each with its
 * children (a runner's sandbox processes: live ones directly, exited ones through its
 * reaped-children time); `postmaster` counts the server and every backend the same way; `self`
 * is this process.
 */
export async function cpuSnapshot(
  groups: Record<string, number[]>,
  postmaster: number | undefined,
): Promise<CpuSnapshot> {
  const seconds: Record<string, number> = {};
  const withChildren = async (pid: number) => {
    let total = await cpuOf(pid, true);
    for (const child of await childPids(pid)) total += await cpuOf(child);
    return total;
  };
  for (const [name, pids] of Object.entries(groups)) {
    seconds[name] = 0;
    for (const pid of pids) seconds[name] += await withChildren(pid);
  }
  if (postmaster !== undefined) seconds.postgres = await withChildren(postmaster);
  const self = process.cpuUsage();
  seconds['bench client'] = (self.user + self.system) / 1e6;
  return { seconds };
}

/** CPU seconds spent per group between two snapshots. */
export function cpuSpent(before: CpuSnapshot, after: CpuSnapshot): Record<string, number> {
  return Object.fromEntries(Object.entries(after.seconds).map(([name, s]) => [name, s - (before.seconds[name] ?? 0)]));
}

/** One thread's totals since it started: CPU seconds and context switches. */
export interface ThreadTimes {
  pid: number;
  tid: number;
  /** The thread's name (comm): Node's worker threads and isolated-vm's threads both read `WorkerThread`. */
  name: string;
  seconds: number;
  voluntarySwitches: number;
  involuntarySwitches: number;
}

/** Every live thread of `pids`, from /proc/<pid>/task; empty without /proc. */
export async function threadTimes(pids: number[]): Promise<ThreadTimes[]> {
  const threads: ThreadTimes[] = [];
  for (const pid of pids) {
    for (const tid of await threadIds(pid)) {
      const f = await statFields(pid, tid);
      if (!f) continue;
      const status = await readFile(`/proc/${pid}/task/${tid}/status`, 'utf8').catch(() => '');
      const name = (await readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8').catch(() => '?')).trim();
      threads.push({
        pid,
        tid,
        name,
        seconds: (Number(f[UTIME]) + Number(f[STIME])) / TICKS_PER_SECOND,
        voluntarySwitches: Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0),
        involuntarySwitches: Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0),
      });
    }
  }
  return threads;
}

/**
 * Waits until every thread of runners `pids` (in start order) runs on the CPUs runner/cpu-split.ts
 * gives its runner, at most `timeoutMs` (a runner looks every 2 s), and returns each runner's CPU
 * lists as they then are. With `RUNNER_CPU_SPLIT=off` every runner keeps the host's CPUs.
 */
export async function settledCpuSplit(pids: number[], timeoutMs = 10_000): Promise<string[]> {
  const host = ownAllowedCpus();
  if (host === undefined) return pids.map(() => '?');
  const split = process.env.RUNNER_CPU_SPLIT !== 'off';
  const wanted = pids.map((_, i) => formatCpuList(split ? cpuShare(host, i, pids.length) : host));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const actual = await Promise.all(pids.map((pid) => threadCpuLists(pid)));
    if (actual.every((lists, i) => lists.length === 1 && lists[0] === wanted[i]) || Date.now() > deadline) {
      return actual.map((lists) => lists.join(' + ') || '?');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
