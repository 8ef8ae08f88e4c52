/**
 * The intake and housekeeping of a runner: the concurrency bound, wake-ups that are duplicated,
 * early or lost (the recovery sweep), and the statistics of pg-boss's job table.
 */
import t from 'tap';
import { enqueueExecution } from '../../shared/queue/execution-jobs.ts';
import { giveUp } from '../../runner/engine/persist.ts';
import { processorRegistry } from '../../runner/processors/registry.ts';
import type { Processor } from '../../runner/processors/processor.ts';
import { switchRoute } from '../../shared/workflow/switch.ts';
import { buildTestApp, setOverride, signInAnonymous } from '../helpers/app.ts';
import { executionJobs } from '../helpers/queue.ts';
import {
  createWorkflow,
  define,
  executionEvents,
  runGraph,
  runnerIdle,
  runningHeld,
  startExecution,
  startEngine,
  waitFor,
  waitForEnd,
  waitForStatus,
} from '../helpers/runner.ts';

const testApp = await buildTestApp(t);
const { app, databaseUrl, db } = testApp;
const alice = await signInAnonymous(app);

t.test('a runner works on at most `concurrency` executions at once and finishes them all', async (t) => {
  // logic.switch, slowed down and watched: how many of its runs overlap on this runner.
  let running = 0;
  let most = 0;
  const watched: Processor = {
    name: 'logic.switch',
    async run(_ctx, config, input) {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 100));
      running -= 1;
      return { kind: 'route', route: switchRoute(config, input), output: input };
    },
  };
  const processors = new Map(processorRegistry);
  processors.set('logic.switch', watched);
  const runner = await startEngine(t, databaseUrl, { concurrency: 2, batchSize: 16, processors });

  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.running_executions_per_org', 'org', flow.orgId, 50);
  const definitionId = await define(app, alice, flow, {
    start: 'sw',
    nodes: { sw: { processor: 'logic.switch', config: { cases: [{ when: { path: 'n', gte: 0 }, route: 'done' }] } } },
  });
  const created = [];
  for (let n = 0; n < 10; n += 1) created.push(await startExecution(app, alice, flow, definitionId, { n }));
  for (const [n, execution] of created.entries()) {
    const ended = await waitForEnd(app, alice, flow, execution.id);
    t.same([ended.status, ended.output], ['succeeded', { n }]);
  }
  t.ok(most <= 2, `at most 2 at once (saw ${most})`);
  t.ok(most >= 1);
  t.equal((await runnerIdle(runner)).inFlight, 0);
});

t.test('duplicate and early wake-ups claim nothing; the execution wakes once, at its time', async (t) => {
  await startEngine(t, databaseUrl);
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, {
    start: 'nap',
    nodes: {
      nap: { processor: 'logic.sleep', config: { seconds: 2 }, routes: { success: 'after' } },
      after: { processor: 'logic.code', config: { code: 'export default () => "after"' } },
    },
  });
  await waitForStatus(app, alice, flow, created.id, 'sleeping');
  // A wake-up due now for an execution that sleeps on: the claim refuses it and re-sends it for wake_at.
  await db.transaction((tx) => enqueueExecution(testApp.boss, tx, created.id));
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.output, 'after');
  const events = await executionEvents(app, alice, flow, created.id);
  t.equal(events.filter((event) => event.kind === 'execution.resumed').length, 1, 'resumed once');
  t.equal(events.filter((event) => event.kind === 'node.started' && event.node === 'after').length, 1);
  const jobs = await executionJobs(db, created.id);
  t.equal(jobs.length, 4, 'creation, sleep, the early one, and its re-send');
  t.equal(jobs[3]!.start_after, jobs[1]!.start_after, 'the early wake-up was re-sent for wake_at');
});

t.test(
  'a wake-up that arrives while its execution is in flight here is claimed once the execution has left',
  async (t) => {
    // The processor gives its own execution back (what a worker thread that failed on it does: lease
    // released, a new wake-up in the same transaction) and waits until this runner has fetched that
    // wake-up, while the execution is still in flight here. Its next write finds the lease gone, the
    // execution leaves, and the deferred wake-up claims it again. No recovery sweep could help:
    // orphans are looked for only after ten minutes.
    let runs = 0;
    const givingBack: Processor = {
      name: 'logic.switch',
      async run(ctx, config, input) {
        runs += 1;
        if (runs === 1) {
          const holder = { executionId: ctx.execution.id, runnerId: runner.id, leaseSeconds: 10 };
          t.ok(await db.transaction((tx) => giveUp(tx, testApp.boss, holder)), 'given back');
          await waitFor(
            () => executionJobs(db, ctx.execution.id),
            (jobs) => jobs.length === 2 && jobs[1]!.state === 'completed',
            'the runner to fetch the new wake-up',
          );
        }
        return { kind: 'route', route: switchRoute(config, input), output: input };
      },
    };
    const processors = new Map(processorRegistry);
    processors.set('logic.switch', givingBack);
    const runner = await startEngine(t, databaseUrl, { processors, orphanSeconds: 600 });
    const flow = await createWorkflow(app, alice);
    const created = await runGraph(
      app,
      alice,
      flow,
      {
        start: 'sw',
        nodes: {
          sw: { processor: 'logic.switch', config: { cases: [{ when: { path: 'n', gte: 0 }, route: 'done' }] } },
        },
      },
      { n: 1 },
    );
    const ended = await waitForEnd(app, alice, flow, created.id);
    t.same([ended.status, ended.output], ['succeeded', { n: 1 }]);
    t.equal(runs, 2, 'the node ran again after the execution was claimed again');
    const events = await executionEvents(app, alice, flow, created.id);
    t.same(
      events.filter((event) => event.kind === 'execution.resumed').map((event) => event.attributes.reason),
      ['handed_back'],
    );
    t.equal((await executionJobs(db, created.id)).length, 2, "no wake-up beyond the creation's and the hand-back's");
    t.equal(await runningHeld(app, alice, flow.orgId), 0, 'its running_executions_per_org slot is free again');
  },
);

t.test('an idle runner claims a created execution from its announcement, without fetching its wake-up', async (t) => {
  // No poll and no recovery sweep in the way: only the announcement and pg-boss's notifications wake the runner.
  await startEngine(t, databaseUrl, { pollSeconds: 300, orphanSeconds: 600 });
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, {
    start: 'a',
    nodes: { a: { processor: 'logic.code', config: { code: 'export default () => "announced"' } } },
  });
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.same([ended.status, ended.output], ['succeeded', 'announced']);
  const { rows } = await db.query<{ id: string; state: string; fetched: boolean }>(
    `SELECT id::text, state::text, started_on IS NOT NULL AS fetched FROM pgboss.job
      WHERE name = 'executions' AND data->>'execution_id' = $1`,
    [created.id],
  );
  t.same(rows, [{ id: created.id, state: 'completed', fetched: false }], "the create's job, completed by the claim");
});

t.test("a runner hears pg-boss's notification of any other wake-up at once", async (t) => {
  // The first run gives its execution back (a new wake-up job, announced by pg-boss only); with a
  // poll every five minutes, only the notification brings it back within the test's time.
  let runs = 0;
  const givingBack: Processor = {
    name: 'logic.switch',
    async run(ctx, config, input) {
      runs += 1;
      if (runs === 1) {
        const holder = { executionId: ctx.execution.id, runnerId: runner.id, leaseSeconds: 10 };
        t.ok(await db.transaction((tx) => giveUp(tx, testApp.boss, holder)), 'given back');
      }
      return { kind: 'route', route: switchRoute(config, input), output: input };
    },
  };
  const processors = new Map(processorRegistry);
  processors.set('logic.switch', givingBack);
  const runner = await startEngine(t, databaseUrl, { processors, pollSeconds: 300, orphanSeconds: 600 });
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(
    app,
    alice,
    flow,
    {
      start: 'sw',
      nodes: {
        sw: { processor: 'logic.switch', config: { cases: [{ when: { path: 'n', gte: 0 }, route: 'done' }] } },
      },
    },
    { n: 2 },
  );
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.same([ended.status, ended.output, runs], ['succeeded', { n: 2 }, 2]);
});

t.test('the recovery sweep wakes an execution whose wake-up was lost', async (t) => {
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, {
    start: 'a',
    nodes: { a: { processor: 'logic.code', config: { code: 'export default () => "found"' } } },
  });
  // The job is gone (a purge, a restore without the queue): nothing would ever wake the execution.
  await db.query(`DELETE FROM pgboss.job WHERE name = 'executions' AND data->>'execution_id' = $1`, [created.id]);
  await startEngine(t, databaseUrl, { orphanSeconds: 1 });
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.output, 'found');
  t.equal((await executionJobs(db, created.id)).length, 1, 'one new wake-up');
});

t.test('the runner keeps the statistics of the job table fresh (ANALYZE)', async (t) => {
  const table = (await testApp.boss.getQueue('executions'))!.table;
  await startEngine(t, databaseUrl, { analyzeSeconds: 1 });
  const analyzed = await waitFor(
    async () => {
      const { rows } = await db.query<{ last_analyze: string | null }>(
        `SELECT last_analyze FROM pg_stat_all_tables WHERE schemaname = 'pgboss' AND relname = $1`,
        [table],
      );
      return rows[0]?.last_analyze ?? null;
    },
    (value) => value !== null,
    'an ANALYZE of the job table',
  );
  t.ok(analyzed);
});
