/**
 * The sandbox in replaceable child processes (sandbox/sandbox-process.ts): runs and ctx calls
 * cross the process boundary unchanged; a memory bomb fails its own run while another tenant's
 * run in the same sandbox succeeds, the child that lost a thread is replaced and killed, and this
 * process keeps running; a child killed from outside fails its runs cleanly and service resumes;
 * abort stops a spinning run; dispose leaves no process behind.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { ServiceError } from '../../shared/errors.ts';
import { ProcessSandbox } from '../../sandbox/sandbox-process.ts';
import { fakeHost, request } from './fake-host.ts';

function alive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (check()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The pids of the sandbox's child processes, from /proc (children of this process running sandbox-child.ts). */
async function childPids(): Promise<number[]> {
  const { readdir, readFile } = await import('node:fs/promises');
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (ppid === process.pid && cmdline.includes('sandbox-child.ts')) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

const degraded: Array<{ reason: string; tenant: string | undefined }> = [];
const logged: string[] = [];
const sandbox = new ProcessSandbox({
  pool: { size: 2, memoryMb: 32 },
  onDegraded: (reason, tenant) => degraded.push({ reason, tenant }),
  log: (message) => logged.push(message),
});
t.teardown(() => sandbox.dispose());

t.test('runs, ctx calls, refusals with their limit, opaque host failures and logs cross the boundary', async (t) => {
  await sandbox.warm();
  t.same(await childPids(), [sandbox.stats().servingPid], 'one child in quiet times: no spare');
  t.match(await sandbox.run(request('export default (input) => ({ twice: input * 2 })', { input: 21 }), fakeHost()), {
    kind: 'output',
    output: { twice: 42 },
  });
  const host = fakeHost({ quota: 1 });
  const code = `export default async (input, ctx) => {
    console.log('hello', 1);
    await ctx.objects.put('a', { n: 1 });
    let limited = null;
    try { await ctx.objects.put('b', 2) } catch (error) { limited = { name: error.name, code: error.code, limit: error.limit, isLimit: error instanceof ctx.LimitExceeded } }
    let opaque = null;
    try { await ctx.objects.put('explode', 1) } catch (error) { opaque = { code: error.code, message: error.message } }
    return { got: await ctx.objects.get('a'), limited, opaque, list: await ctx.objects.list({}) };
  }`;
  const result = await sandbox.run(request(code), host);
  t.same(result.kind === 'output' && result.output, {
    got: { n: 1 },
    limited: {
      name: 'LimitExceeded',
      code: 'limit_exceeded',
      limit: { id: 'workflow.session_objects_per_session', value: 1, held: 1 },
      isLimit: true,
    },
    opaque: { code: 'internal_error', message: 'The host call failed.' },
    list: ['a'],
  });
  t.same(host.logs, [{ level: 'info', message: 'hello 1' }]);
  t.equal(host.reported.length, 1, 'the host failure was reported on this side');
  t.notOk(JSON.stringify(result).includes('10.0.0.7'), 'no host detail reaches the code');
  // A refusal thrown as a ServiceError keeps its code across the boundary.
  const refusing = {
    ...fakeHost(),
    thread: {
      post: async () => {
        throw new ServiceError('thread_item_too_large', 'Too large.');
      },
    },
  };
  t.match(await sandbox.run(request('export default (i, ctx) => ctx.thread.post({ text: "x" })'), refusing), {
    kind: 'error',
    error: { code: 'thread_item_too_large', message: 'Too large.' },
  });
});

t.test(
  "a memory bomb fails its own run; another tenant's run in the same sandbox succeeds; the child is replaced",
  async (t) => {
    await sandbox.warm();
    const [before] = await childPids();
    t.ok(before, 'a child serves runs');
    const hold = fakeHost();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const held = { ...hold, objects: { ...hold.objects, get: async () => gate.then(() => 'held') } };
    // Another tenant's run is in progress on the child when the bomb goes off.
    const neighbour = sandbox.run(
      request("export default (i, ctx) => ctx.objects.get('x')", { tenant: 'org-b', timeoutMs: 30_000 }),
      held,
    );
    const bomb = await sandbox.run(
      request('export default () => new Array(1e9).fill(0)', { tenant: 'org-a', timeoutMs: 30_000 }),
      fakeHost(),
    );
    t.match(bomb, { kind: 'error', error: { code: 'code_memory' } });
    open();
    t.match(await neighbour, { kind: 'output', output: 'held' }, "the other tenant's run finished on the old child");
    t.match(await sandbox.run(request('export default () => "after"', { tenant: 'org-b' }), fakeHost()), {
      kind: 'output',
      output: 'after',
    });
    // isolated-vm loses this bomb's thread (test/runner/process.test.ts relies on it too); the pool
    // notices within its abandon grace and the child is replaced.
    await until(() => degraded.length > 0, 'the child to report the lost thread');
    t.equal(degraded[0]!.tenant, 'org-a', 'the bomb is blamed on its tenant');
    // No spare was started before the first loss: while the replacement starts, the lost child's
    // healthy isolates keep serving, so this run does not wait for a process to start.
    t.match(await sandbox.run(request('export default () => "bridged"', { tenant: 'org-b' }), fakeHost()), {
      kind: 'output',
      output: 'bridged',
    });
    t.ok(logged.includes('sandbox child serving until its replacement is ready'), 'the lost child bridged');
    await until(
      () => logged.includes('sandbox child retired'),
      'the lost child to be retired once its replacement is ready',
    );
    t.ok(
      logged.indexOf('sandbox child serving until its replacement is ready') < logged.indexOf('sandbox child retired'),
    );
    await until(() => !alive(before), 'the old child to be killed');
    t.ok(sandbox.stats().replaced >= 1);
    t.match(
      await sandbox.run(request('export default () => "fresh"', { tenant: 'org-b' }), fakeHost()),
      { kind: 'output', output: 'fresh' },
      'a fresh child serves',
    );
    t.notOk((await childPids()).includes(before!), 'the old child is gone');
  },
);

t.test(
  'a child killed from outside: its run is tried once more in another child, a second death fails it',
  async (t) => {
    await sandbox.warm();
    const { servingPid, sparePid } = sandbox.stats();
    t.ok(servingPid, 'a serving child');
    t.ok(sparePid, 'a spare, kept since the bomb of the previous test');
    let calls = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const base = fakeHost();
    const held = {
      ...base,
      objects: {
        ...base.objects,
        get: async () => {
          calls++;
          await gate;
          return 'held';
        },
      },
    };
    const run = sandbox.run(request("export default (i, ctx) => ctx.objects.get('x')", { timeoutMs: 30_000 }), held);
    await until(() => calls === 1, 'the run to call the host');
    process.kill(servingPid!, 'SIGKILL');
    await until(() => calls === 2, 'the run to be tried again in the spare');
    open();
    t.match(await run, { kind: 'output', output: 'held' }, 'the second try finished (node runs are at-least-once)');
    t.equal(sandbox.stats().servingPid, sparePid, 'the spare took over');
    t.ok(sandbox.stats().sparePid, 'and a new spare is kept, after a second loss');

    // A run whose second child dies too fails. It calls the host before it spins, so each kill
    // below comes once the try is running in the child it kills, however busy this host is.
    let tries = 0;
    const counted = { ...base, objects: { ...base.objects, get: async () => ++tries } };
    const spin = sandbox.run(
      request("export default async (i, ctx) => { await ctx.objects.get('x'); for (;;) {} }", { timeoutMs: 30_000 }),
      counted,
    );
    for (let i = 1; i <= 2; i++) {
      await until(() => tries === i, `try ${i} to run`);
      process.kill(sandbox.stats().servingPid!, 'SIGKILL');
    }
    t.match(await spin, {
      kind: 'error',
      error: { code: 'internal_error', message: 'The sandbox process stopped during the run.' },
    });
    t.match(await sandbox.run(request('export default () => "again"'), fakeHost()), {
      kind: 'output',
      output: 'again',
    });
  },
);

t.test('abort stops a spinning run and the next run is served', async (t) => {
  const abort = new AbortController();
  const spin = sandbox.run(
    request('export default () => { for (;;) {} }', { timeoutMs: 30_000 }),
    fakeHost(),
    abort.signal,
  );
  await sleep(100);
  abort.abort();
  t.match(await spin, { kind: 'error', error: { code: 'code_aborted' } });
  t.match(await sandbox.run(request('export default () => 3'), fakeHost()), { kind: 'output', output: 3 });
});

t.test('a child that stops answering is killed and replaced, and its run is tried again', async (t) => {
  // SIGSTOP stands for anything that holds the child's main thread without a deadline: no
  // message comes from it any more. Without the liveness check the run below never ends.
  const watched = new ProcessSandbox({
    pool: { size: 1 },
    unresponsiveMs: 1500,
    log: (message) => logged.push(message),
  });
  t.teardown(() => watched.dispose());
  await watched.warm();
  const stuck = watched.stats().servingPid!;
  process.kill(stuck, 'SIGSTOP');
  t.match(await watched.run(request('export default () => 7'), fakeHost()), { kind: 'output', output: 7 });
  t.not(watched.stats().servingPid, stuck, 'another child serves');
  t.equal(watched.stats().replaced, 1);
  await until(() => !alive(stuck), 'the stopped child to be gone');
  t.ok(logged.includes('sandbox child unresponsive: killed'), 'logged');
  await watched.dispose();
});

t.test("a child that crashes while only one organization's code runs in it blames that organization", async (t) => {
  // SIGABRT stands for V8's fatal out-of-memory abort, which code can cause outside the heap bound
  // (a regular expression of thousands of \p{RGI_Emoji} under /v). A kill from outside (SIGKILL,
  // the test above) blames no one.
  const blamed: Array<{ reason: string; tenant: string | undefined }> = [];
  const crashy = new ProcessSandbox({
    pool: { size: 2 },
    onDegraded: (reason, tenant) => blamed.push({ reason, tenant }),
  });
  t.teardown(() => crashy.dispose());
  await crashy.warm();
  const pid = crashy.stats().servingPid!;
  const spin = crashy.run(
    request('export default () => { for (;;) {} }', { tenant: 'org-crasher', timeoutMs: 30_000 }),
    fakeHost(),
  );
  await until(() => (crashy.stats().pool?.busy ?? 0) > 0, 'the spinning run to hold an isolate');
  process.kill(pid, 'SIGABRT');
  t.match(await spin, { kind: 'error', error: { code: 'code_memory' } }, 'its run is not tried again');
  t.match(blamed, [{ tenant: 'org-crasher', reason: /crashed \(SIGABRT\)/ }], 'a strike for it');
  t.match(await crashy.run(request('export default () => 5', { tenant: 'org-other' }), fakeHost()), {
    kind: 'output',
    output: 5,
  });
  await crashy.dispose();
});

t.test('dispose leaves no child process behind', async (t) => {
  t.ok((await childPids()).length > 0);
  await sandbox.dispose();
  await until(() => true, 'nothing');
  t.same(await childPids(), []);
  t.match(await sandbox.run(request('export default () => 1'), fakeHost()), {
    kind: 'error',
    error: { code: 'internal_error' },
  });
});
