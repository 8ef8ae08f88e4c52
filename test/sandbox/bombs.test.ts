/**
 * Allocation bombs that outrun isolated-vm's memory bound inside V8 builtins. isolated-vm parks
 * the isolate's thread instead of aborting the process, so each bomb runs in a child process
 * (test/sandbox/fixtures/bomb-runner.ts): the run must end as code_memory, the next run must
 * succeed, and the pool must report itself degraded so the runner gets replaced.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import type { PoolStats } from '../../sandbox/isolate-pool.ts';
import type { CodeResult } from '../../sandbox/messages.ts';

const runner = join(import.meta.dirname, 'fixtures', 'bomb-runner.ts');

function runBomb(code: string): Promise<{ bomb: CodeResult; next: CodeResult; stats: PoolStats }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--no-node-snapshot', runner, code],
      { timeout: 90_000, maxBuffer: 1 << 20 },
      (_error, stdout, stderr) => {
        // The child kills itself (or crashes on the way out): only its report matters.
        const line = stdout.split('\n').find((l) => l.startsWith('{'));
        if (!line) reject(new Error(`no report from the bomb runner; stderr: ${stderr.slice(0, 2000)}`));
        else resolve(JSON.parse(line));
      },
    );
  });
}

const bombs = [
  'export default () => new Array(1e9).fill(0)',
  'export default () => { const a = []; a.length = 1e9; a.fill(1) }',
  'export default () => JSON.stringify(new Array(1e8).fill("xxxxxxxxxxx")).length',
  'export default () => Array.from({ length: 1e9 }).length',
  'export default () => { const m = new Map(); for (let i = 0; ; i++) m.set(i, i) }',
  // Run synchronously on a worker thread, this one took the process to 2 GB and a crash (docs/sandbox.md).
  'export default () => { const a = []; while (true) a.push({ x: new Array(1000) }) }',
];

for (const code of bombs) {
  t.test(code, async (t) => {
    const { bomb, next, stats } = await runBomb(code);
    t.match(bomb, {
      kind: 'error',
      error: {
        code: 'code_memory',
        message: 'The code used more than the sandbox memory bound (32 MiB) and was stopped.',
      },
    });
    t.match(next, { kind: 'output', output: 'next' }, 'the pool serves the next run with a fresh isolate');
    t.match(stats, { retired: 1, created: 2 }, 'the bombed isolate was retired');
    if (stats.abandoned > 0 || stats.catastrophic > 0) t.equal(stats.degraded, true, 'a lost thread degrades the pool');
    else t.equal(stats.degraded, false);
  });
}
