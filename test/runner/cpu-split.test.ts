/**
 * Runners on one host split its CPUs (runner/cpu-split.ts): the share arithmetic, the CPU list
 * format, and real runner processes pinning themselves as runners join and leave.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { startSystem } from '../../bench/system.ts';
import { cpuShare } from '../../runner/cpu-split.ts';
import { formatCpuList, ownAllowedCpus, parseCpuList, threadCpuLists } from '../../shared/cpu-list.ts';
import { createTestDatabase } from '../helpers/db.ts';

t.setTimeout(120_000);

t.test('CPU lists parse and format as Linux writes them', async (t) => {
  t.same(parseCpuList('0'), [0]);
  t.same(parseCpuList('0-3,6'), [0, 1, 2, 3, 6]);
  t.same(parseCpuList('6,0-1,1\n'), [0, 1, 6], 'sorted, without duplicates');
  t.equal(formatCpuList([0, 1, 2, 3, 6]), '0-3,6');
  t.equal(formatCpuList([5, 1, 0, 5]), '0-1,5');
  t.equal(formatCpuList([]), '');
  for (const bad of ['', 'a', '1-', '3-1', '0,,1', '-1']) t.throws(() => parseCpuList(bad), `"${bad}" is refused`);
});

t.test('a runner alone keeps every CPU; runners that fit split them in contiguous shares', async (t) => {
  const four = [0, 1, 2, 3];
  t.same(cpuShare(four, 0, 1), four);
  t.same(
    [0, 1].map((i) => cpuShare(four, i, 2)),
    [
      [0, 1],
      [2, 3],
    ],
  );
  t.same(
    [0, 1, 2].map((i) => cpuShare(four, i, 3)),
    [[0], [1], [2, 3]],
  );
  t.same(
    [0, 1, 2, 3].map((i) => cpuShare(four, i, 4)),
    [[0], [1], [2], [3]],
  );
  t.same(cpuShare([2, 5], 1, 2), [5], 'the CPUs the process was given, not 0..n');
  // Five runners on four CPUs: any fixed share would put two on one CPU while others have one.
  t.same(cpuShare(four, 4, 5), four);
  t.same(cpuShare(four, -1, 2), four, 'a runner not in the list keeps everything');
  t.same(cpuShare(four, 2, 2), four);
});

const host = ownAllowedCpus();
const linuxWithCpus = process.platform === 'linux' && host !== undefined && host.length >= 2;

/** The CPU lists of the threads of `pid`: one entry when the whole process agrees; never empty. */
async function processCpus(pid: number): Promise<string[]> {
  const lists = await threadCpuLists(pid);
  if (lists.length === 0) throw new Error(`No thread of ${pid} could be read.`);
  return lists;
}

async function waitForCpus(pid: number, wanted: string): Promise<string[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const lists = await processCpus(pid);
    if ((lists.length === 1 && lists[0] === wanted) || Date.now() > deadline) return lists;
    await sleep(100);
  }
}

t.test(
  'two runner processes on one host each take half its CPUs, every thread of them; the one left takes them all back',
  { skip: !linuxWithCpus && 'needs Linux and at least two CPUs' },
  async (t) => {
    const cpus = host as number[];
    const system = await startSystem({ runners: 2, databaseUrl: await createTestDatabase(t) });
    t.teardown(() => system.stop());
    const [first, second] = system.runners as [(typeof system.runners)[0], (typeof system.runners)[0]];
    const shares = [cpuShare(cpus, 0, 2), cpuShare(cpus, 1, 2)].map(formatCpuList);
    t.not(shares[0], shares[1]);
    t.same(await waitForCpus(first.pid, shares[0]!), [shares[0]], `the first runner's threads run on ${shares[0]}`);
    t.same(await waitForCpus(second.pid, shares[1]!), [shares[1]], `the second runner's threads run on ${shares[1]}`);

    await system.stopProcess(second);
    const all = formatCpuList(cpus);
    t.same(await waitForCpus(first.pid, all), [all], 'alone again, the first runner runs on every CPU');
  },
);

t.test(
  'RUNNER_CPU_SPLIT=off leaves the CPUs to the scheduler; without taskset a runner keeps every CPU, says why once and goes on working',
  { skip: !linuxWithCpus && 'needs Linux and at least two CPUs' },
  async (t) => {
    // One system for both: neither runner pins itself, so neither changes what the other sees.
    const system = await startSystem({ runners: 0, databaseUrl: await createTestDatabase(t) });
    t.teardown(() => system.stop());
    const off = await system.startRunner({ RUNNER_CPU_SPLIT: 'off' });
    // Runners are started by absolute path, so an empty PATH only hides taskset from this one.
    const blind = await system.startRunner({ PATH: '/nonexistent' });
    // Three looks at the registry by each runner (every 2 s): a failure must not be retried and
    // reported again, and a runner told off must not pin itself on a later look.
    await sleep(6_500);
    const all = formatCpuList(host as number[]);
    for (const runner of [off, blind]) {
      t.ok(runner.running(), `${runner.name} runs`);
      t.same(await processCpus(runner.pid), [all], `${runner.name} runs on every CPU`);
    }
    t.equal(
      blind.output.filter((line) => line.includes('CPU split failed')).length,
      1,
      'the runner without taskset said why once',
    );
    t.equal(
      off.output.filter((line) => line.includes('CPU split failed')).length,
      0,
      'the runner told off did not try',
    );
  },
);
