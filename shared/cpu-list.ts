/**
 * CPU lists as Linux writes them (`0-3,6`: cpuset(7) "list format"), and the CPUs a thread may
 * run on, from /proc/<pid>/task/<tid>/status (`Cpus_allowed_list`).
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { threadIds } from './proc-stat.ts';

/** Parses `0-3,6` into `[0, 1, 2, 3, 6]` (sorted, no duplicates); throws on anything else. */
export function parseCpuList(text: string): number[] {
  const cpus = new Set<number>();
  for (const part of text.trim().split(',')) {
    const match = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!match) throw new Error(`Not a CPU list: "${text}".`);
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    if (last < first) throw new Error(`Not a CPU list: "${text}".`);
    for (let cpu = first; cpu <= last; cpu++) cpus.add(cpu);
  }
  return [...cpus].sort((a, b) => a - b);
}

/** Formats CPUs as a list with ranges: `[0, 1, 2, 3, 6]` → `0-3,6`. */
export function formatCpuList(cpus: readonly number[]): string {
  const sorted = [...new Set(cpus)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === (sorted[j] as number) + 1) j++;
    parts.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

function allowedOf(status: string): number[] | undefined {
  const line = /^Cpus_allowed_list:\s*(\S+)\s*$/m.exec(status);
  return line ? parseCpuList(line[1] as string) : undefined;
}

/** The CPUs this process's calling thread may run on; undefined where Linux /proc does not say. */
export function ownAllowedCpus(): number[] | undefined {
  try {
    return allowedOf(readFileSync('/proc/thread-self/status', 'utf8'));
  } catch {
    return undefined;
  }
}

/** The CPUs thread `tid` of `pid` (its main thread by default) may run on; undefined if unreadable. */
async function allowedCpus(pid: number, tid: number = pid): Promise<number[] | undefined> {
  const status = await readFile(`/proc/${pid}/task/${tid}/status`, 'utf8').catch(() => undefined);
  return status === undefined ? undefined : allowedOf(status);
}

/**
 * The distinct CPU lists the threads of `pid` may run on, formatted: one entry when the whole
 * process agrees. Threads that end meanwhile are skipped; empty where nothing could be read.
 */
export async function threadCpuLists(pid: number): Promise<string[]> {
  const lists = new Set<string>();
  for (const tid of await threadIds(pid)) {
    const cpus = await allowedCpus(pid, tid);
    if (cpus !== undefined) lists.add(formatCpuList(cpus));
  }
  return [...lists];
}
