import { statFields, threadIds } from '../../shared/proc-stat.ts';

/**
 * The nice value of every thread of `pid`, from Linux /proc (stat(5) field 19). Throws when it
 * reads none, so an assertion over the values can never hold vacuously.
 */
export async function threadNices(pid: number): Promise<number[]> {
  const nices: number[] = [];
  for (const tid of await threadIds(pid)) {
    const fields = await statFields(pid, tid);
    if (fields) nices.push(Number(fields[16]));
  }
  if (nices.length === 0) throw new Error(`No thread of process ${pid} could be read from /proc.`);
  return nices;
}
