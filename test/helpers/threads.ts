import { readdirSync, readFileSync } from 'node:fs';

/** The nice value of every thread of `pid`, from Linux /proc (stat(5) field 19). */
export function threadNices(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}
