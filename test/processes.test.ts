import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import t from 'tap';
import { freePort } from '../shared/db/free-port.ts';
import { statFields } from '../shared/proc-stat.ts';
import { Launcher, type Launch } from './helpers/launch.ts';

// `npm start` on a fresh data folder: embedded PostgreSQL, control plane and runner as processes.
const dataDir = await mkdtemp(join(tmpdir(), 'ws-start-'));
const [port, opsPort, pgPort, metricsPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
const opsToken = 'processes-test-ops-token';
const env: NodeJS.ProcessEnv = {
  ...process.env,
  DATA_DIR: dataDir,
  PORT: String(port),
  OPS_PORT: String(opsPort),
  EMBEDDED_PG_PORT: String(pgPort),
  OPS_TOKEN: opsToken,
  LOG_LEVEL: 'warn',
  METRICS_PORT: String(metricsPort),
};
delete env.DATABASE_URL;
delete env.TEST_DATABASE_URL;

const launcher = new Launcher();

/** Runs `npm start`'s entry, as npm does, with the test's ports and data folder. */
function launch(): Launch {
  return launcher.launch(join(import.meta.dirname, '..', 'scripts', 'start.ts'), env);
}

t.teardown(async () => {
  // Only when an assertion failed half-way: never leave a stack running.
  await launcher.stopAll('SIGTERM');
  await rm(dataDir, { recursive: true, force: true });
});

/** Polls `probe` until it returns a value; a generous deadline fails the test with recent output. */
async function waitFor<T>(
  run: Launch,
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${run.output.join('\n')}`);
    await sleep(200);
  }
}

/** Resolves with the exit code, or fails the test if the process has not exited after 30 s. */
async function exitCode(run: Launch): Promise<number | null> {
  // Unref'd: it fails the test if the stack hangs, and keeps nothing alive otherwise.
  const deadline = sleep(30_000, undefined, { ref: false }).then(() => {
    throw new Error(`npm start did not exit:\n${run.output.join('\n')}`);
  });
  const [code] = await Promise.race([run.exited, deadline]);
  return code;
}

async function signIn(): Promise<number | undefined> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/auth/anonymous`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  return res.status === 200 ? res.status : undefined;
}

async function aliveRunners(): Promise<{ pid: number }[]> {
  const res = await fetch(`http://127.0.0.1:${opsPort}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${opsToken}` },
    body: JSON.stringify({ query: '{ runners { pid alive } }' }),
  });
  const body = (await res.json()) as { data: { runners: { pid: number; alive: boolean }[] } };
  return body.data.runners.filter((r) => r.alive);
}

/** The stat line of `pid` after its parenthesised name: state, ppid, ... (empty once it is gone). */
async function stat(pid: number): Promise<string[]> {
  return (await statFields(pid)) ?? [];
}

/** A process counts as gone once it no longer exists or is a zombie awaiting its reaper. */
async function running(pid: number): Promise<boolean> {
  const fields = await stat(pid);
  return fields.length > 0 && fields[0] !== 'Z';
}

/** Pids of every process below `root`, with their command lines. */
async function descendants(root: number): Promise<{ pid: number; command: string }[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = await stat(Number(entry));
    if (fields.length) parents.set(Number(entry), Number(fields[1]));
  }
  const found: { pid: number; command: string }[] = [];
  const queue = [root];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const [pid, ppid] of parents) {
      if (ppid !== parent) continue;
      found.push({
        pid,
        command: (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' '),
      });
      queue.push(pid);
    }
  }
  return found;
}

const first = launch();

t.test('npm start serves the API with a registered runner', async (t) => {
  t.equal(await waitFor(first, 'anonymous sign-in', signIn), 200);
  const runners = await waitFor(first, 'a live runner', async () => {
    const alive = await aliveRunners();
    return alive.length ? alive : undefined;
  });
  t.equal(runners.length, 1, 'one runner');

  const client = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${pgPort}/workspace` });
  await client.connect();
  const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
  const settings = await client.query<{ name: string; setting: string }>(
    `SELECT name, setting FROM pg_settings WHERE name IN ('shared_buffers', 'checkpoint_timeout', 'logging_collector') ORDER BY name`,
  );
  // An operator turning PostgreSQL's logging collector on (here for the next start): the server's
  // readiness is read from its output, which the collector would take away (the next test starts
  // the stack again on this data folder).
  await client.query('ALTER SYSTEM SET logging_collector = on');
  await client.end();
  t.ok(rows[0]!.n > 0, 'migrated the workspace database of the embedded server');
  const setting = Object.fromEntries(settings.rows.map((r) => [r.name, r.setting]));
  // shared_buffers is in 8 kB pages: sized from the machine, so at least the 128 MiB floor.
  t.ok(Number(setting.shared_buffers) >= (128 * 1024) / 8, 'shared buffers sized from the machine');
  t.equal(setting.checkpoint_timeout, '900', 'checkpoints every 15 minutes');
  t.equal(setting.logging_collector, 'off');
  t.match(await readFile(join(dataDir, 'postgresql.log'), 'utf8'), /database system is ready/, "the server's log");

  // The probes of both processes, without credentials.
  t.same(await (await fetch(`http://127.0.0.1:${port}/readyz`)).json(), {
    status: 'ready',
    checks: { database: true, migrated: true, stopping: false },
  });
  t.same(await (await fetch(`http://127.0.0.1:${metricsPort}/healthz`)).json(), { status: 'ok' });
  t.match(await (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).json(), { status: 'ready' });
  t.match(
    await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text(),
    /workspace_sandbox_isolates\{state="idle"\}/,
    "the runner's metrics",
  );
  const scraped = await fetch(`http://127.0.0.1:${opsPort}/metrics`, {
    headers: { authorization: `Bearer ${opsToken}` },
  });
  t.match(await scraped.text(), /process_cpu_seconds_total/, "the control plane's, on the ops port");
});

t.test('a runner killed with SIGKILL is restarted', async (t) => {
  const [before] = await aliveRunners();
  t.ok(before, 'a runner is alive');
  process.kill(before!.pid, 'SIGKILL');
  const replacement = await waitFor(first, 'a restarted runner', async () =>
    (await aliveRunners()).find((r) => r.pid !== before!.pid),
  );
  t.not(replacement.pid, before!.pid);
  t.ok(await running(replacement.pid), 'the new runner process runs');
});

t.test(
  'the embedded PostgreSQL killed with SIGKILL: every surface answers 503 unavailable meanwhile, it is restarted, service resumes, nothing acknowledged is lost',
  async (t) => {
    const signUp = await fetch(`http://127.0.0.1:${port}/v1/auth/anonymous`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const { user, access_token: token } = (await signUp.json()) as { user: { id: string }; access_token: string };
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const created = await fetch(`http://127.0.0.1:${port}/v1/orgs`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ alias: 'kept-across-restart' }),
    });
    t.equal(created.status, 201, 'an organization is created (acknowledged) before the loss');
    const { org } = (await created.json()) as { org: { id: string } };
    const socket = new WebSocket(`ws://127.0.0.1:${port}/v1`, [
      'authorization.bearer.base64',
      Buffer.from(token).toString('base64url'),
    ]);
    await once(socket, 'open');
    const replies: unknown[] = [];
    socket.addEventListener('message', (event) => replies.push(JSON.parse(String(event.data))));
    const [before] = await aliveRunners();

    const postmaster = Number((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(postmaster, 'SIGKILL');
    // Right after the kill, before the supervisor's first restart (≥ 250 ms), all three surfaces refuse.
    const rest = await waitFor(
      first,
      'REST to answer 503',
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/orgs/${org.id}`, { headers: auth });
        return res.status === 503 ? res : undefined;
      },
      5_000,
    );
    t.equal(rest.headers.get('retry-after'), '2', 'Retry-After');
    t.ok(rest.headers.get('x-request-id'), 'x-request-id');
    t.match(await rest.json(), { status: 'failure', error: 'unavailable' });
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'get_user', params: { user_id: 'me' } }));
    const rpc = await waitFor(
      first,
      'the JSON-RPC answer',
      async () => replies.find((r) => (r as { id?: number }).id === 1),
      5_000,
    );
    t.match(
      rpc,
      { error: { data: { error: 'unavailable', http_status: 503, retry_after: 2 } } },
      'a WebSocket call is refused the same way, on the same connection',
    );
    const health = await fetch(`http://127.0.0.1:${opsPort}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${opsToken}` },
      body: JSON.stringify({ query: '{ health { status database } }' }),
    });
    t.match(
      await health.json(),
      { data: { health: { status: 'degraded', database: false } } },
      'ops health says degraded',
    );
    const notReady = await fetch(`http://127.0.0.1:${port}/readyz`);
    t.equal(notReady.status, 503, '/readyz flips to 503 while the database is down');
    t.match(await notReady.json(), { status: 'not_ready', checks: { database: false } });

    // The supervisor starts PostgreSQL again; the control plane and runner reconnect by themselves.
    const back = await waitFor(
      first,
      'REST to answer again',
      async () => {
        const res = await fetch(`http://127.0.0.1:${port}/v1/orgs/${org.id}`, { headers: auth });
        return res.status === 200 ? res : undefined;
      },
      30_000,
    );
    t.match(
      await back.json(),
      { org: { id: org.id, alias: 'kept-across-restart' } },
      'the organization acknowledged before the loss is there',
    );
    t.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200, '/readyz is back');
    t.equal(
      (await fetch(`http://127.0.0.1:${port}/v1/users/${user.id}`, { headers: auth })).status,
      200,
      'the user too, and the token still works',
    );
    socket.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'get_user', params: { user_id: 'me' } }));
    t.match(
      await waitFor(
        first,
        'the second JSON-RPC answer',
        async () => replies.find((r) => (r as { id?: number }).id === 2),
        10_000,
      ),
      { result: { user: { id: user.id } } },
      'the same WebSocket connection serves again',
    );
    socket.close();
    t.not(
      Number((await readFile(join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]),
      postmaster,
      'a new postmaster',
    );
    const runners = await waitFor(
      first,
      'a live runner after the loss',
      async () => {
        const alive = await aliveRunners();
        return alive.length ? alive : undefined;
      },
      30_000,
    );
    t.ok(runners.length >= 1, `a runner heartbeats again (pid ${runners[0]!.pid}, before ${before?.pid})`);
  },
);

t.test('SIGTERM stops every process of the stack and exits 0', async (t) => {
  const tree = await descendants(first.proc.pid!);
  // supervisor, control plane, runner, postgres and its workers
  t.ok(tree.length >= 5, `found the process tree (${tree.length} processes)`);
  first.proc.kill('SIGTERM');
  t.equal(await exitCode(first), 0, 'exit code');
  const left = [];
  for (const { pid } of tree) if (await running(pid)) left.push(pid);
  t.same(left, [], 'no process left behind');
});

t.test('after the supervisor is killed with SIGKILL, its children stop and the next start recovers', async (t) => {
  const second = launch();
  await waitFor(second, 'anonymous sign-in', signIn);
  const client = new pg.Client({ connectionString: `postgres://postgres:postgres@127.0.0.1:${pgPort}/workspace` });
  await client.connect();
  const collector = (await client.query<{ logging_collector: string }>('SHOW logging_collector')).rows[0]!;
  await client.end();
  t.equal(collector.logging_collector, 'off', 'started with the collector forced off, whatever the configuration says');
  const tree = await descendants(second.proc.pid!);
  const supervisor = tree.find((p) => p.command.includes('scripts/supervisor.ts'));
  const children = tree.filter(
    (p) => p.command.includes('control-plane/main.ts') || p.command.includes('runner/main.ts'),
  );
  const postmaster = tree.find((p) => p.command.includes(`-D ${join(dataDir, 'pg')}`));
  t.ok(supervisor && postmaster, 'found the supervisor and PostgreSQL');
  t.equal(children.length, 2, 'found the control plane and the runner');

  process.kill(supervisor!.pid, 'SIGKILL');
  t.not(await exitCode(second), 0, 'the launcher reports the failure');
  await waitFor(
    second,
    'the orphaned children to stop',
    async () => {
      for (const { pid } of children) if (await running(pid)) return undefined;
      return true;
    },
    30_000,
  );
  t.pass('the control plane and the runner stopped by themselves');
  t.ok(await running(postmaster!.pid), 'PostgreSQL outlived it (nothing ran its exit hook)');

  const third = launch();
  t.equal(await waitFor(third, 'anonymous sign-in after recovery', signIn), 200);
  t.notOk(await running(postmaster!.pid), 'the leftover PostgreSQL was stopped');
  third.proc.kill('SIGTERM');
  t.equal(await exitCode(third), 0, 'exit code');
});
