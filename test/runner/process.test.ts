/**
 * The runner as a process (runner/main.ts) on the test database: SIGTERM drains it (nothing is
 * left `running` under it, it exits 0), and a memory bomb that makes isolated-vm lose a thread
 * fails its own run only: the sandbox child process is replaced, the runner keeps its pid and
 * serves other organizations, and the bomb's organization is cooled down.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildTestApp, signInAnonymous } from '../helpers/app.ts';
import { Launcher, type Launch } from '../helpers/launch.ts';
import {
  createWorkflow,
  executionEvents,
  runGraph,
  runningHeld,
  startEngine,
  waitFor,
  waitForEnd,
} from '../helpers/runner.ts';

const { app, databaseUrl, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const dataDir = await mkdtemp(join(tmpdir(), 'ws-runner-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));

const launcher = new Launcher();
t.teardown(() => launcher.stopAll('SIGKILL'));

function launchRunner(): Launch {
  // RUNNER_NICE 0: at the default 10 the runner's sandbox children yield the CPU to everything
  // else, and on a machine busy with other work (a CI host, the rest of the suite) this file then
  // waited minutes for them; what it checks does not depend on the children's priority.
  const env = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    RUNNER_NICE: '0',
  };
  return launcher.launch(join(import.meta.dirname, '..', '..', 'runner', 'main.ts'), env);
}

async function exitOf(launch: Launch): Promise<[number | null, NodeJS.Signals | null]> {
  const deadline = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`the runner did not exit:\n${launch.output.join('\n')}`)), 60_000).unref(),
  );
  return Promise.race([launch.exited, deadline]);
}

async function execution(id: string): Promise<{ status: string; lease_owner: string | null }> {
  const { rows } = await db.query<{ status: string; lease_owner: string | null }>(
    'SELECT status, lease_owner FROM executions WHERE id = $1',
    [id],
  );
  return rows[0]!;
}

t.test(
  'SIGTERM drains: the node in flight is handed back, the process exits 0, another runner finishes it',
  async (t) => {
    const launch = launchRunner();
    const flow = await createWorkflow(app, alice);
    const created = await runGraph(app, alice, flow, {
      start: 'slow',
      nodes: {
        // Busy for 20 s (past the drain's grace) the first time only: a marker object remembers it.
        slow: {
          processor: 'logic.code',
          config: {
            code: 'export default async (input, ctx) => { if (await ctx.objects.get("ran-once")) return "slow"; await ctx.objects.put("ran-once", true); const end = Date.now() + 20000; while (Date.now() < end) {} return "slow" }',
          },
          routes: { success: 'last' },
        },
        last: { processor: 'logic.code', config: { code: 'export default (input) => input + " then last"' } },
      },
    });
    await waitFor(
      () => execution(created.id),
      (row) => row.status === 'running' && row.lease_owner !== null,
      'the runner process to claim it',
    );
    const owner = (await execution(created.id)).lease_owner;
    launch.proc.kill('SIGTERM');
    const [code, signal] = await exitOf(launch);
    t.same([code, signal], [0, null], 'a clean exit');
    t.same(await execution(created.id), { status: 'queued', lease_owner: null }, 'handed back, not left running');
    const {
      rows: [registration],
    } = await db.query<{ stopped_at: string | null }>('SELECT stopped_at FROM runners WHERE id = $1', [owner]);
    t.ok(registration?.stopped_at, 'the runner deregistered');

    await startEngine(t, databaseUrl);
    const ended = await waitForEnd(app, alice, flow, created.id);
    t.equal(ended.output, 'slow then last');
    const events = await executionEvents(app, alice, flow, created.id);
    t.same(
      events.filter((event) => event.kind === 'execution.resumed').map((event) => event.attributes),
      [{ reason: 'handed_back' }],
    );
    t.equal(await runningHeld(app, alice, flow.orgId), 0);
  },
);

t.test(
  "a memory bomb fails its own run; the runner keeps its pid, serves another organization, and cools the bomb's organization down",
  async (t) => {
    const launch = launchRunner();
    const bob = await signInAnonymous(app);
    const flow = await createWorkflow(app, alice);
    const other = await createWorkflow(app, bob);
    const one = {
      start: 'one',
      nodes: { one: { processor: 'logic.code', config: { code: 'export default () => 1' } } },
    };
    // Running before the bomb: the sandbox child is up.
    t.equal((await waitForEnd(app, bob, other, (await runGraph(app, bob, other, one)).id)).status, 'succeeded');
    // Allocates inside a V8 builtin that isolated-vm cannot interrupt: the isolate thread is lost.
    const created = await runGraph(app, alice, flow, {
      start: 'bomb',
      nodes: { bomb: { processor: 'logic.code', config: { code: 'export default () => new Array(1e9).fill(0)' } } },
    });
    const ended = await waitForEnd(app, alice, flow, created.id);
    t.equal(ended.status, 'failed');
    t.same(ended.error, {
      code: 'code_memory',
      message: 'The code used more than the sandbox memory bound (64 MiB) and was stopped.',
    });
    t.equal(await runningHeld(app, alice, flow.orgId), 0);

    // The organization is cooled down (strike recorded) and its next run fails at once.
    const {
      rows: [cooldown],
    } = await waitFor(
      () => db.query<{ strikes: number }>('SELECT strikes FROM sandbox_cooldowns WHERE org_id = $1', [flow.orgId]),
      (result) => result.rows.length > 0,
      'the strike to be recorded',
    );
    t.equal(cooldown!.strikes, 1);
    const refused = await waitFor(
      async () => waitForEnd(app, alice, flow, (await runGraph(app, alice, flow, one)).id),
      (execution) => execution.error?.code === 'code_cooldown',
      "the organization's code to be refused",
    );
    t.equal(refused.status, 'failed');

    // Another organization is served by the same process.
    for (let i = 0; i < 3; i++)
      t.equal((await waitForEnd(app, bob, other, (await runGraph(app, bob, other, one)).id)).output, 1);
    t.equal(launch.proc.exitCode, null, 'the runner process still runs');
    t.equal(launch.proc.signalCode, null);
    launch.proc.kill('SIGTERM');
    t.same(await exitOf(launch), [0, null], 'and stops cleanly');
  },
);
