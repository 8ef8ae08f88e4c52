/**
 * Durable sleep and cancellation through the API: a sleeping execution holds no runner and
 * survives its runner stopping; cancel ends an execution whether it sleeps or runs, and the
 * runner working on it (or the wake-up job that fires later) changes nothing afterwards.
 */
import t from 'tap';
import { buildTestApp, signInAnonymous } from '../helpers/app.ts';
import { executionJobs } from '../helpers/queue.ts';
import {
  command,
  createWorkflow,
  executionEvents,
  runGraph,
  runnerIdle,
  runningHeld,
  fileEngine,
  startEngine,
  waitFor,
  waitForEnd,
  waitForStatus,
} from '../helpers/runner.ts';

const { app, databaseUrl, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);

const shared = fileEngine(t, databaseUrl);

function code(source: string, routes?: Record<string, string | null>): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source }, ...(routes ? { routes } : {}) };
}

t.test('logic.sleep parks the execution; a runner started after the first one stopped completes it', async (t) => {
  const first = await startEngine(t, databaseUrl);
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(
    app,
    alice,
    flow,
    {
      start: 'before',
      nodes: {
        before: code('export default (input) => ({ n: input.n + 1 })', { success: 'nap' }),
        nap: { processor: 'logic.sleep', config: { seconds: 2 }, routes: { success: 'after' } },
        after: code('export default (input) => ({ n: input.n * 10 })'),
      },
    },
    { n: 1 },
  );

  const sleeping = await waitForStatus(app, alice, flow, created.id, 'sleeping');
  t.equal(sleeping.ended_at, null);
  t.same(await runnerIdle(first), { inFlight: 0, leases: 0 }, 'no runner is busy with a sleeping execution');
  t.equal(await runningHeld(app, alice, flow.orgId), 1, 'a sleeping execution still counts as running');
  const {
    rows: [row],
  } = await db.query('SELECT lease_owner, wake_at FROM executions WHERE id = $1', [created.id]);
  t.equal(row.lease_owner, null, 'no lease is held while sleeping');
  t.ok(row.wake_at, 'wake_at is set');

  await first.stop();
  await shared.get();
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.status, 'succeeded');
  t.same(ended.output, { n: 20 });
  t.equal(ended.node_runs, 3);

  const events = await executionEvents(app, alice, flow, created.id);
  t.same(
    events.map((event) => event.kind),
    [
      'execution.started',
      'node.started',
      'node.finished',
      'node.started',
      'node.finished',
      'execution.sleeping',
      'execution.resumed',
      'node.started',
      'node.finished',
      'execution.finished',
    ],
  );
  const asleep = events.find((event) => event.kind === 'execution.sleeping');
  t.equal(asleep.node, 'nap');
  t.same(Object.keys(asleep.attributes).sort(), ['seconds', 'wake_at']);
  t.equal(asleep.attributes.seconds, 2);
  t.equal(new Date(asleep.attributes.wake_at).toISOString(), asleep.attributes.wake_at);
  const resumed = events.find((event) => event.kind === 'execution.resumed');
  t.same(resumed.attributes, { reason: 'woke' });
  t.ok(Date.parse(resumed.at) >= Date.parse(asleep.attributes.wake_at), 'it woke no earlier than wake_at');
  t.equal(await runningHeld(app, alice, flow.orgId), 0);
});

t.test('cancel while sleeping: the execution ends cancelled and its wake-up later changes nothing', async (t) => {
  const runner = await shared.get();
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, {
    start: 'nap',
    nodes: {
      nap: { processor: 'logic.sleep', config: { seconds: 1 }, routes: { success: 'after' } },
      after: code('export default () => "woke"'),
    },
  });
  await waitForStatus(app, alice, flow, created.id, 'sleeping');
  const cancelled = (await command(app, alice, flow.rev, 'cancel_execution', { execution_id: created.id })).execution;
  t.equal(cancelled.status, 'cancelled');
  t.ok(cancelled.ended_at);
  t.equal(await runningHeld(app, alice, flow.orgId), 0, 'the running slot is freed');

  // The delayed wake-up fires and completes without claiming anything.
  await waitFor(
    () => executionJobs(db, created.id),
    (jobs) => jobs.length === 2 && jobs.every((job) => job.state === 'completed'),
    'the wake-up job to complete',
  );
  const after = await waitForEnd(app, alice, flow, created.id);
  t.equal(after.status, 'cancelled');
  t.equal(after.output, null);
  const events = await executionEvents(app, alice, flow, created.id);
  t.same(
    events.map((event) => event.kind),
    ['execution.started', 'node.started', 'node.finished', 'execution.sleeping', 'execution.finished'],
  );
  t.same(events.at(-1).attributes.status, 'cancelled');
  t.equal((await runnerIdle(runner)).inFlight, 0);
});

t.test('cancel while running: the runner notices and writes nothing more', async (t) => {
  const runner = await shared.get();
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, {
    start: 'busy',
    nodes: {
      busy: code('export default () => { const end = Date.now() + 1500; while (Date.now() < end) {} return "done" }', {
        success: 'after',
      }),
      after: code('export default () => "after"'),
    },
  });
  await waitFor(
    () => executionEvents(app, alice, flow, created.id),
    (events) => events.some((event) => event.kind === 'node.started'),
    'the node to start',
  );
  const cancelled = (await command(app, alice, flow.rev, 'cancel_execution', { execution_id: created.id })).execution;
  t.equal(cancelled.status, 'cancelled');
  t.equal(await runningHeld(app, alice, flow.orgId), 0);

  await waitFor(
    async () => runner.engine.stats().inFlight,
    (n) => n === 0,
    'the runner to let go of the execution',
  );
  const after = await waitForEnd(app, alice, flow, created.id);
  t.equal(after.status, 'cancelled');
  t.equal(after.output, null);
  t.equal(after.node_runs, 1, 'the next node never started');
  const events = await executionEvents(app, alice, flow, created.id);
  t.same(
    events.map((event) => event.kind),
    ['execution.started', 'node.started', 'execution.finished'],
    "the node's result was discarded",
  );
  t.same(events.at(-1).attributes.status, 'cancelled');
});

t.test('cancel of an execution no runner has claimed yet', async (t) => {
  const flow = await createWorkflow(app, alice);
  // No runner may be running yet: the execution must still be unclaimed when it is cancelled.
  await shared.stop();
  const created = await runGraph(app, alice, flow, { start: 'a', nodes: { a: code('export default () => 1') } });
  const cancelled = (await command(app, alice, flow.rev, 'cancel_execution', { execution_id: created.id })).execution;
  t.equal(cancelled.status, 'cancelled');
  // A runner starting now takes the wake-up and leaves the execution as it is.
  await startEngine(t, databaseUrl);
  await waitFor(
    () => executionJobs(db, created.id),
    (jobs) => jobs.every((job) => job.state === 'completed'),
    'the job to complete',
  );
  const after = await waitForEnd(app, alice, flow, created.id);
  t.equal(after.status, 'cancelled');
  t.equal(after.started_at, null, 'it never started');
  t.same(
    (await executionEvents(app, alice, flow, created.id)).map((event) => event.kind),
    ['execution.finished'],
  );
});
