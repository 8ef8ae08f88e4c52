import { readdir } from 'node:fs/promises';
import { statFields } from '../../shared/proc-stat.ts';

/** The nice value of every thread of `pid`, from Linux /proc (stat(5) field 19). */
export async function threadNices(pid: number): Promise<number[]> {
  const nices: number[] = [];
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const fields = await statFields(pid, Number(tid));
    if (fields) nices.push(Number(fields[16]));
  }
  return nices;
}
