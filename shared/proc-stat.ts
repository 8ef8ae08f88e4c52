/**
 * Linux /proc/<pid>/stat (or a thread's, /proc/<pid>/task/<tid>/stat), split into its fields after
 * the parenthesised command name, which may itself hold spaces and parentheses: index 0 is the
 * state, so stat(5) field n is at index n - 3. Undefined where there is no such file (the process
 * is gone, or the system has no /proc).
 */
import { readdir, readFile } from 'node:fs/promises';

export async function statFields(pid: number, tid?: number): Promise<string[] | undefined> {
  const path = tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`;
  const line = await readFile(path, 'utf8').catch(() => undefined);
  return line?.slice(line.lastIndexOf(')') + 2).split(' ');
}

/** The thread ids of `pid` (/proc/<pid>/task); empty where there are none to read. */
export async function threadIds(pid: number): Promise<number[]> {
  const entries = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  return entries.map(Number).filter((id) => Number.isInteger(id) && id > 0);
}

/** The pids of the live children of `pid` (every /proc entry whose parent it is); empty without /proc. */
export async function childPids(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = await statFields(Number(entry));
    // stat(5) field 4, the parent's pid.
    if (fields && Number(fields[1]) === pid) children.push(Number(entry));
  }
  return children;
}
