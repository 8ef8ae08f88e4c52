/**
 * Durability through the API: a runner killed mid-node (simulated: it stops renewing and writes
 * nothing more) loses only the node in flight, which another runner runs again after the lease
 * runs out; a poison execution ends failed after the bound; a draining runner finishes or hands
 * back what it holds, so nothing is left `running` under a runner that is gone.
 */
import t from 'tap';
import { buildTestApp, setOverride, signInAnonymous } from '../helpers/app.ts';
import {
  command,
  createWorkflow,
  define,
  executionEvents,
  runGraph,
  runnerIdle,
  startExecution,
  runningHeld,
  startEngine,
  waitFor,
  waitForEnd,
  type Workflow,
} from '../helpers/runner.ts';

const { app, databaseUrl, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);

/** Short leases so a killed runner's executions are free again within seconds. */
const SHORT_LEASE = { leaseSeconds: 2, renewSeconds: 0.5 };

function code(source: string, routes?: Record<string, string | null>): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source }, ...(routes ? { routes } : {}) };
}

function busy(ms: number, then: string): string {
  return `export default (input) => { const end = Date.now() + ${ms}; while (Date.now() < end) {} return ${then} }`;
}

/**
 * Spins until the session holds the object `released` (or for a minute), then returns `then`: a node the
 * test ends when it chooses, so that whatever the load on the host it is still running when the
 * test acts on its runner, and a run of it after `release()` ends at once.
 */
function untilReleased(then: string): string {
  return `export default async (input, ctx) => {
    if (!(await ctx.objects.get('released'))) { const end = Date.now() + 60000; while (Date.now() < end) {} }
    return ${then};
  }`;
}

async function release(flow: Workflow): Promise<void> {
  await command(app, alice, flow.rev, 'upload_session_object', {
    session_id: flow.sessionId,
    alias: 'released',
    value: true,
  });
}

/** first → slow → last; the output records the path. `slow` is `untilReleased`, or busy for `slowMs`. */
function threeNodes(slowMs: number | 'until released'): unknown {
  const then = '({ path: [...input.path, "slow"] })';
  return {
    start: 'first',
    nodes: {
      first: code('export default (input) => ({ path: ["first"] })', { success: 'slow' }),
      slow: code(slowMs === 'until released' ? untilReleased(then) : busy(slowMs, then), { success: 'last' }),
      last: code('export default (input) => ({ path: [...input.path, "last"] })'),
    },
  };
}

interface Holding {
  status: string;
  lease_owner: string | null;
  attempts: number;
}

async function holder(executionId: string): Promise<Holding> {
  const { rows } = await db.query<Holding>('SELECT status, lease_owner, attempts FROM executions WHERE id = $1', [
    executionId,
  ]);
  return rows[0]!;
}

function startedCount(events: any[], node: string): number {
  return events.filter((event) => event.kind === 'node.started' && event.node === node).length;
}

async function nodeStarted(flow: Workflow, executionId: string, node: string, times = 1): Promise<void> {
  await waitFor(
    () => executionEvents(app, alice, flow, executionId),
    (events) => startedCount(events, node) >= times,
    `node ${node} to start`,
  );
}

t.test("a killed runner's execution resumes on another runner from the last completed node", async (t) => {
  const doomed = await startEngine(t, databaseUrl, SHORT_LEASE);
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, threeNodes('until released'));
  await nodeStarted(flow, created.id, 'slow');
  t.equal((await holder(created.id)).lease_owner, doomed.id);
  await doomed.kill();
  await release(flow);

  const rescuer = await startEngine(t, databaseUrl, SHORT_LEASE);
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.status, 'succeeded');
  t.same(ended.output, { path: ['first', 'slow', 'last'] });
  const events = await executionEvents(app, alice, flow, created.id);
  t.equal(startedCount(events, 'first'), 1, 'the completed node did not run again');
  t.equal(startedCount(events, 'slow'), 2, 'the node in flight ran again (at-least-once)');
  t.equal(startedCount(events, 'last'), 1);
  t.same(
    events.filter((event) => event.kind === 'execution.resumed').map((event) => event.attributes),
    [{ reason: 'recovered', attempts: 1 }],
  );
  t.equal(events.filter((event) => event.kind === 'execution.finished').length, 1, 'it finished once');
  t.equal(ended.node_runs, 4, 'the re-run counts as a node run');
  t.equal((await holder(created.id)).attempts, 0, 'a completed node run resets the attempts');
  t.equal(await runningHeld(app, alice, flow.orgId), 0);
  t.equal((await runnerIdle(rescuer)).inFlight, 0);
});

t.test('a poison execution ends failed after the recovery bound instead of crash-looping its runners', async (t) => {
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, { start: 'poison', nodes: { poison: code(busy(60_000, '1')) } });
  // Every runner that takes it dies mid-node: 1 first claim + 3 recoveries.
  for (let kill = 1; kill <= 4; kill += 1) {
    const runner = await startEngine(t, databaseUrl, SHORT_LEASE);
    await waitFor(
      () => holder(created.id),
      (row) => row.lease_owner === runner.id && row.status === 'running',
      `runner ${kill} to hold it`,
    );
    await nodeStarted(flow, created.id, 'poison', kill);
    await runner.kill();
  }
  await startEngine(t, databaseUrl, SHORT_LEASE);
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.status, 'failed');
  t.same(ended.error, {
    code: 'internal_error',
    message:
      'gave up after 3 recoveries: runners working on this execution stopped 4 times without finishing a node run',
  });
  const events = await executionEvents(app, alice, flow, created.id);
  t.equal(startedCount(events, 'poison'), 4, 'the fifth holder did not run it again');
  t.same(
    events.filter((event) => event.kind === 'execution.resumed').map((event) => event.attributes.attempts),
    [1, 2, 3, 4],
  );
  t.same(events.at(-1).attributes.status, 'failed');
  t.equal(await runningHeld(app, alice, flow.orgId), 0);
});

t.test('drain: a node in flight finishes within the grace period, then the execution is handed back', async (t) => {
  const draining = await startEngine(t, databaseUrl);
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, threeNodes(1000));
  await nodeStarted(flow, created.id, 'slow');
  await draining.stop(30_000);
  const row = await holder(created.id);
  t.not(row.status, 'running', 'nothing is left running under the stopped runner');
  t.equal(row.lease_owner, null);

  await startEngine(t, databaseUrl);
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.same(ended.output, { path: ['first', 'slow', 'last'] });
  const events = await executionEvents(app, alice, flow, created.id);
  t.equal(startedCount(events, 'slow'), 1, 'the node finished on the draining runner');
  t.same(
    events.filter((event) => event.kind === 'execution.resumed').map((event) => event.attributes),
    [{ reason: 'handed_back' }],
  );
  t.equal(await runningHeld(app, alice, flow.orgId), 0);
});

t.test('drain: a node still running after the grace period is handed back and runs again elsewhere', async (t) => {
  const draining = await startEngine(t, databaseUrl);
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, threeNodes('until released'));
  await nodeStarted(flow, created.id, 'slow');
  await draining.stop(100);
  await release(flow);
  const row = await holder(created.id);
  t.equal(row.status, 'queued', 'handed back at once');
  t.equal(row.lease_owner, null);
  t.equal(row.attempts, 0, 'a hand-back is not a crash recovery');

  await startEngine(t, databaseUrl);
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.same(ended.output, { path: ['first', 'slow', 'last'] });
  const events = await executionEvents(app, alice, flow, created.id);
  t.equal(startedCount(events, 'slow'), 2);
  t.equal(
    events.filter((event) => event.kind === 'node.finished' && event.node === 'slow').length,
    1,
    'the abandoned run left no result',
  );
});

t.test('two runners share a queue; each execution runs once to its end', async (t) => {
  const runners = [
    await startEngine(t, databaseUrl, { concurrency: 3 }),
    await startEngine(t, databaseUrl, { concurrency: 3 }),
  ];
  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.running_executions_per_org', 'org', flow.orgId, 50);
  const definitionId = await define(app, alice, flow, threeNodes(50));
  const created = await Promise.all(Array.from({ length: 20 }, () => startExecution(app, alice, flow, definitionId)));
  for (const execution of created) {
    const ended = await waitForEnd(app, alice, flow, execution.id);
    t.same(ended.output, { path: ['first', 'slow', 'last'] });
    t.equal(ended.node_runs, 3);
  }
  const { rows } = await db.query<{ kind: string; n: number }>(
    `SELECT kind, count(*)::int AS n FROM execution_events WHERE execution_id = ANY($1::uuid[]) GROUP BY kind ORDER BY kind`,
    [created.map((execution) => execution.id)],
  );
  t.same(
    rows,
    [
      { kind: 'execution.finished', n: 20 },
      { kind: 'execution.started', n: 20 },
      { kind: 'node.finished', n: 60 },
      { kind: 'node.started', n: 60 },
    ],
    'each execution started, ran each node and finished exactly once',
  );
  t.equal(await runningHeld(app, alice, flow.orgId), 0);
  for (const runner of runners) t.equal((await runnerIdle(runner)).inFlight, 0);
});
