import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import t from 'tap';
import { freePort } from '../shared/db/free-port.ts';

// `npm start` on a fresh data folder: embedded PostgreSQL, control plane and runner as processes.
const dataDir = await mkdtemp(join(tmpdir(), 'ws-start-'));
const [port, opsPort, pgPort] = [await freePort(), await freePort(), await freePort()];
const opsToken = 'processes-test-ops-token';

const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), OPS_PORT: String(opsPort), EMBEDDED_PG_PORT: String(pgPort), OPS_TOKEN: opsToken, LOG_LEVEL: 'warn' };
delete env.DATABASE_URL;
delete env.TEST_DATABASE_URL;

const launcher = spawn(process.execPath, ['--no-node-snapshot', join(import.meta.dirname, '..', 'scripts', 'start.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
const output: string[] = [];
const keep = (chunk: Buffer) => {
  output.push(...chunk.toString().trimEnd().split('\n'));
  output.splice(0, output.length - 40);
};
launcher.stdout.on('data', keep);
launcher.stderr.on('data', keep);
const exited = once(launcher, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;

t.teardown(async () => {
  // Only when an assertion failed half-way: never leave the stack running.
  if (launcher.exitCode === null && launcher.signalCode === null) {
    launcher.kill('SIGTERM');
    await exited;
  }
  await rm(dataDir, { recursive: true, force: true });
});

/** Polls `probe` until it returns a value; a generous deadline fails the test with recent output. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (launcher.exitCode !== null) throw new Error(`npm start exited (${launcher.exitCode}) while waiting for ${what}:\n${output.join('\n')}`);
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${output.join('\n')}`);
    await sleep(200);
  }
}

interface RunnerView {
  pid: number;
  alive: boolean;
}

async function aliveRunners(): Promise<RunnerView[]> {
  const res = await fetch(`http://127.0.0.1:${opsPort}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${opsToken}` },
    body: JSON.stringify({ query: '{ runners { pid alive } }' }),
  });
  const body = (await res.json()) as { data: { runners: RunnerView[] } };
  return body.data.runners.filter((r) => r.alive);
}

/** Pids of every process below `root`, from /proc. */
async function descendants(root: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (stat) parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift()!;
    for (const [child, parent] of parents) if (parent === pid) (found.push(child), queue.push(child));
  }
  return found;
}

/** A process counts as gone once it no longer exists or is a zombie awaiting its reaper. */
async function running(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

t.test('npm start serves the API with a registered runner', async (t) => {
  const status = await waitFor('anonymous sign-in', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/auth/anonymous`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    return res.status === 200 ? res.status : undefined;
  });
  t.equal(status, 200);

  const runners = await waitFor('a live runner', async () => {
    const alive = await aliveRunners();
    return alive.length ? alive : undefined;
  });
  t.equal(runners.length, 1, 'one runner');

  const client = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${pgPort}/workspace` });
  await client.connect();
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
  await client.end();
  t.ok(rows[0]!.n > 0, 'migrated the workspace database of the embedded server');
});

t.test('a runner killed with SIGKILL is restarted', async (t) => {
  const [before] = await aliveRunners();
  t.ok(before, 'a runner is alive');
  process.kill(before!.pid, 'SIGKILL');
  const replacement = await waitFor('a restarted runner', async () => (await aliveRunners()).find((r) => r.pid !== before!.pid));
  t.not(replacement.pid, before!.pid);
  t.ok(await running(replacement.pid), 'the new runner process runs');
});

t.test('SIGTERM stops every process of the stack and exits 0', async (t) => {
  const pids = await descendants(launcher.pid!);
  // supervisor, control plane, runner, postgres and its workers
  t.ok(pids.length >= 5, `found the process tree (${pids.length} processes)`);
  launcher.kill('SIGTERM');
  // An unref'd deadline: it fails the test if the stack hangs, and keeps nothing alive otherwise.
  const deadline = sleep(30_000, undefined, { ref: false }).then(() => {
    throw new Error(`npm start did not exit:\n${output.join('\n')}`);
  });
  const [code] = await Promise.race([exited, deadline]);
  t.equal(code, 0, 'exit code');
  const left = [];
  for (const pid of pids) if (await running(pid)) left.push(pid);
  t.same(left, [], 'no process left behind');
});
