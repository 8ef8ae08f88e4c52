import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { yieldCpu } from '../../shared/priority.ts';
import { threadNices } from '../helpers/threads.ts';

const PRIORITY_MODULE = new URL('../../shared/priority.ts', import.meta.url).href;

/**
 * Runs `body` in a child process that has `yieldCpu` in scope and then starts a worker thread, so
 * the threads that exist before the call and one started after it are both there to read.
 * Resolves with the child's pid and what it printed, while it still runs; `stop` ends it.
 * `detached`: the child leads a session of its own (as a systemd service does).
 */
async function child(
  body: string,
  options: { detached?: boolean } = {},
): Promise<{ pid: number; printed: unknown; stop: () => Promise<void> }> {
  const source = `
    import { reclaimCpu, yieldCpu } from ${JSON.stringify(PRIORITY_MODULE)};
    import { Worker } from 'node:worker_threads';
    const printed = (() => { ${body} })();
    const worker = new Worker('setInterval(() => {}, 1000)', { eval: true });
    worker.on('online', () => process.stdout.write(JSON.stringify(printed) + '\\n'));
    process.stdin.on('end', () => process.exit(0));
    process.stdin.resume();`;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', source], {
    stdio: ['pipe', 'pipe', 'inherit'],
    detached: options.detached ?? false,
  });
  let out = '';
  proc.stdout.setEncoding('utf8');
  proc.stdout.on('data', (chunk: string) => (out += chunk));
  while (!out.includes('\n')) {
    if (proc.exitCode !== null) throw new Error(`the child exited with ${proc.exitCode}`);
    await Promise.race([once(proc.stdout, 'data'), once(proc, 'exit')]);
  }
  return {
    pid: proc.pid!,
    printed: JSON.parse(out.trim()),
    stop: async () => {
      const exited = once(proc, 'exit');
      proc.stdin.end();
      await exited;
    },
  };
}

t.test('yieldCpu refuses what is not a nice value, before changing anything', async (t) => {
  for (const bad of [-1, 20, 1.5, Number.NaN]) t.throws(() => yieldCpu(bad), RangeError, String(bad));
});

t.test(
  'every thread of the process ends at the nice value: those that existed, and one started after',
  { skip: process.platform !== 'linux' && 'nice values per thread are read from Linux /proc' },
  async (t) => {
    const proc = await child('return yieldCpu(7);');
    t.teardown(proc.stop);
    const printed = proc.printed as { nice: number; raised: number };
    t.equal(printed.nice, 7);
    const nices = await threadNices(proc.pid);
    // The main thread, V8's platform threads (started before the call) and the worker thread.
    t.ok(printed.raised >= 2, `raised ${printed.raised} threads`);
    t.ok(nices.length > printed.raised, 'the worker thread started after the call is counted too');
    t.same([...new Set(nices)], [7], `thread nice values: ${nices.join(', ')}`);
  },
);

t.test(
  'a stopping runner takes the default priority back where it may (root), and keeps its value where it may not',
  { skip: process.platform !== 'linux' && 'nice values per thread are read from Linux /proc' },
  async (t) => {
    const proc = await child('yieldCpu(9); return reclaimCpu();');
    t.teardown(proc.stop);
    const root = process.getuid?.() === 0;
    const nices = [...new Set(await threadNices(proc.pid))];
    if (root) {
      t.ok((proc.printed as number) >= 2, `lowered ${String(proc.printed)} threads`);
      t.same(nices, [0], 'every thread back at 0');
    } else {
      t.equal(proc.printed, 0, 'an unprivileged process lowers nothing');
      t.same(nices, [9]);
    }
  },
);

t.test(
  'a thread already at a higher nice value keeps it: yieldCpu never asks for more priority',
  { skip: process.platform !== 'linux' && 'nice values per thread are read from Linux /proc' },
  async (t) => {
    const proc = await child('yieldCpu(12); return yieldCpu(7);');
    t.teardown(proc.stop);
    t.same(proc.printed, { nice: 12, raised: 0, autogroup: null });
    t.same([...new Set(await threadNices(proc.pid))], [12]);
  },
);

const AUTOGROUPS = (() => {
  try {
    readFileSync('/proc/self/autogroup');
    return true;
  } catch {
    return false;
  }
})();

t.test(
  "a process leading its own session raises its session's autogroup nice value too; one sharing a session does not",
  { skip: !AUTOGROUPS && 'the kernel has no autogroup scheduling' },
  async (t) => {
    const before = await readFile('/proc/self/autogroup', 'utf8');
    const shared = await child('return yieldCpu(7);');
    t.teardown(shared.stop);
    t.equal((shared.printed as { autogroup: unknown }).autogroup, null, 'not its session leader: left alone');
    t.equal(await readFile('/proc/self/autogroup', 'utf8'), before, "the parent's session keeps its value");
    const leader = await child('return yieldCpu(7);', { detached: true });
    t.teardown(leader.stop);
    t.equal((leader.printed as { autogroup: unknown }).autogroup, 7);
    t.match(await readFile(`/proc/${leader.pid}/autogroup`, 'utf8'), / nice 7\n?$/);
    t.equal(await readFile('/proc/self/autogroup', 'utf8'), before);
  },
);
