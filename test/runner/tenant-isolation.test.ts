/**
 * Tenant isolation in a runner, through the API: one organization's hostile code cannot keep
 * another's executions from starting and ending; code that can never finish fails at once; a
 * cancel stops running code and frees its isolate (docs/sandbox.md, "Fair share" and "Hostile
 * code"). The runner is small on purpose (one engine thread, one or two isolates), so a single
 * tenant's runs fill it. No assertion is about time: without the behaviour under test, the waits
 * below would run into `workflow.code_run_seconds` (870 s) and the test would time out.
 */
import t, { type Test } from 'tap';
import { buildTestApp, signInAnonymous } from '../helpers/app.ts';
import {
  command,
  createWorkflow,
  executionEvents,
  getExecution,
  runGraph,
  runningHeld,
  startEngine,
  waitFor,
  waitForEnd,
  waitForStatus,
} from '../helpers/runner.ts';

const { app, databaseUrl } = await buildTestApp(t);
const mallory = await signInAnonymous(app);
const bob = await signInAnonymous(app);

function code(source: string, routes?: Record<string, string | null>): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source }, ...(routes ? { routes } : {}) };
}

const spin = { start: 'spin', nodes: { spin: code('export default () => { for (;;) {} }') } };
const threeNodes = {
  start: 'a',
  nodes: {
    a: code('export default (input) => ({ n: input.n + 1 })', { success: 'b' }),
    b: code(
      'export default async (input, ctx) => { await ctx.objects.put("seen", input.n); return { n: input.n * 2 } }',
      { success: 'c' },
    ),
    c: code('export default (input) => ({ n: input.n + 3 })'),
  },
};

t.test(
  "another organization's executions start and end while one organization's hostile code fills the runner",
  async (t) => {
    const runner = await startEngine(t, databaseUrl, { workerThreads: 1, isolatesPerThread: 2 });
    const hostile = await createWorkflow(app, mallory);
    const spinning = [];
    for (let i = 0; i < 4; i++) spinning.push(await runGraph(app, mallory, hostile, spin));
    const selfRouting = await runGraph(app, mallory, hostile, {
      start: 'again',
      nodes: { again: code('export default (input) => ({ n: (input?.n ?? 0) + 1 })', { success: 'again' }) },
    });
    // Mallory's executions are running: the first spinning in an isolate, the others' code waiting
    // for one (a new organization holds one isolate at a time until a run of it ends by itself).
    for (const execution of spinning.slice(0, 2)) await waitForStatus(app, mallory, hostile, execution.id, 'running');

    const flow = await createWorkflow(app, bob);
    for (let i = 0; i < 3; i++) {
      const created = await runGraph(app, bob, flow, threeNodes, { n: i });
      const ended = await waitForEnd(app, bob, flow, created.id);
      t.equal(ended.status, 'succeeded', `bob's execution ${i} succeeded`);
      t.same(ended.output, { n: (i + 1) * 2 + 3 });
    }

    for (const execution of [...spinning, selfRouting]) {
      await command(app, mallory, hostile.rev, 'cancel_execution', { execution_id: execution.id });
    }
    t.equal(await runningHeld(app, mallory, hostile.orgId), 0);
    await waitFor(
      async () => runner.engine.stats(),
      (stats) => stats.inFlight === 0,
      'the runner to let go of the cancelled executions',
    );
  },
);

t.test(
  "a runner whose every slot holds one organization's long executions still runs another organization's",
  async (t) => {
    // Two slots, both taken by spinning code; the third spinning execution waits in the queue.
    const runner = await startEngine(t, databaseUrl, {
      concurrency: 2,
      batchSize: 1,
      workerThreads: 1,
      isolatesPerThread: 2,
    });
    const hostile = await createWorkflow(app, mallory);
    const spinning = [];
    for (let i = 0; i < 3; i++) spinning.push(await runGraph(app, mallory, hostile, spin));
    await waitFor(
      async () => runner.engine.stats(),
      (stats) => stats.inFlight === 2,
      'both slots to be taken',
    );

    const flow = await createWorkflow(app, bob);
    const created = await runGraph(app, bob, flow, threeNodes, { n: 1 });
    const ended = await waitForEnd(app, bob, flow, created.id);
    t.equal(ended.status, 'succeeded', "bob's execution ran in a slot past the full runner's concurrency");
    t.same(ended.output, { n: 7 });
    const third = await getExecution(app, mallory, hostile, spinning[2]!.id);
    t.equal(
      third.status,
      'queued',
      "mallory's third execution still waits: the extra slot is for organizations with none",
    );

    for (const execution of spinning)
      await command(app, mallory, hostile.rev, 'cancel_execution', { execution_id: execution.id });
    await waitFor(
      async () => runner.engine.stats(),
      (stats) => stats.inFlight === 0,
      'the runner to let go of the cancelled executions',
    );
  },
);

t.test(
  'never-settling code fails at once; cancel stops running code at once and frees its isolate for the next run',
  async (t) => {
    // One isolate: the next run of the same organization can only start once the spinning one is stopped.
    const runner = await startEngine(t, databaseUrl, {
      workerThreads: 1,
      isolatesPerThread: 1,
      leaseSeconds: 600,
      renewSeconds: 300,
    });
    const flow = await createWorkflow(app, mallory);
    // Code that can never finish fails on its own, long before its deadline.
    const never = await runGraph(app, mallory, flow, {
      start: 'wait',
      nodes: { wait: code('export default async () => { await new Promise(() => {}) }') },
    });
    const stuck = await waitForEnd(app, mallory, flow, never.id);
    t.equal(stuck.status, 'failed');
    t.match(stuck.error, { code: 'code_error', message: /can never finish/ });

    const spinning = await runGraph(app, mallory, flow, spin);
    await waitForStatus(app, mallory, flow, spinning.id, 'running');
    const events = await waitFor(
      () => executionEvents(app, mallory, flow, spinning.id),
      (list) => list.some((event) => event.kind === 'node.started'),
      'the code to start',
    );
    t.ok(events.length > 0);

    const cancelled = (await command(app, mallory, flow.rev, 'cancel_execution', { execution_id: spinning.id }))
      .execution;
    t.equal(cancelled.status, 'cancelled');
    t.equal(await runningHeld(app, mallory, flow.orgId), 0, 'the running slot is freed by the cancel');

    // With a 300 s renewal the lease keeper cannot be what noticed: the cancel's announcement was.
    const next = await runGraph(app, mallory, flow, { start: 'one', nodes: { one: code('export default () => 1') } });
    const ended = await waitForEnd(app, mallory, flow, next.id);
    t.equal(ended.status, 'succeeded');
    t.equal(ended.output, 1);
    await waitFor(
      async () => runner.engine.stats(),
      (stats) => stats.inFlight === 0,
      'the runner to let go of the cancelled execution',
    );

    const after = await executionEvents(app, mallory, flow, spinning.id);
    t.equal(
      after.filter((event) => event.kind === 'execution.finished').length,
      1,
      'execution.finished is written once',
    );
    t.same(after.at(-1)?.attributes, { status: 'cancelled', duration_ms: after.at(-1)?.attributes.duration_ms });
    t.notOk(
      after.some((event) => event.kind === 'node.finished' || event.kind === 'node.failed'),
      'nothing the stopped node did was written',
    );
  },
);

/** Places one organization's code tries to leave a mark in; another's reads them. */
const MARKS: Array<[string, string, string]> = [
  ['globalThis', 'globalThis.mark = "mallory"', 'globalThis.mark'],
  ['Object.prototype', 'Object.prototype.mark = "mallory"', '({}).mark'],
  ['Array.prototype.push', 'Array.prototype.push = () => "mallory"', '[].push(1)'],
  ['JSON.stringify', 'JSON.stringify = () => "mallory"', 'JSON.stringify(1)'],
  ['Error.prepareStackTrace', 'Error.prepareStackTrace = () => "mallory"', 'new Error("x").stack'],
];
const leave = code(`export default () => {
  const took = [];
  ${MARKS.map(([label, write]) => `try { ${write}; took.push(${JSON.stringify(label)}); } catch {}`).join('\n  ')}
  return { took, random: [Math.random(), Math.random()] };
}`);
const look = code(`export default () => {
  const found = [];
  ${MARKS.map(([label, , read]) => `try { if ((${read}) === 'mallory') found.push(${JSON.stringify(label)}); } catch (e) { found.push(${JSON.stringify(label)} + ': ' + e.message); }`).join('\n  ')}
  return { found, random: [Math.random(), Math.random()] };
}`);

/** Mallory's code tries to leave marks, then bob's looks for them on the same isolate; the runner's sandbox counts. */
async function markThenLook(t: Test, codeContexts?: 'shared' | 'tenant') {
  // One isolate, runs one after the other: both run on it.
  const runner = await startEngine(t, databaseUrl, {
    workerThreads: 1,
    isolatesPerThread: 1,
    ...(codeContexts ? { codeContexts } : {}),
  });
  const hostile = await createWorkflow(app, mallory);
  const left = await waitForEnd(
    app,
    mallory,
    hostile,
    (await runGraph(app, mallory, hostile, { start: 'leave', nodes: { leave } })).id,
  );
  const flow = await createWorkflow(app, bob);
  const looked = await waitForEnd(
    app,
    bob,
    flow,
    (await runGraph(app, bob, flow, { start: 'look', nodes: { look } })).id,
  );
  t.equal(left.status, 'succeeded');
  t.same(left.output.took, ['Error.prepareStackTrace'], "mallory's code could set only its own run's stack formatter");
  t.equal(looked.status, 'succeeded');
  t.same(looked.output.found, [], "bob's code found none of mallory's marks");
  t.notSame(looked.output.random, left.output.random, 'Math.random is seeded per run');
  const sandbox = await waitFor(
    async () => runner.engine.sandbox(),
    (snapshot) => snapshot !== null && snapshot.contextsReused + snapshot.contextsMade >= 2,
    'the sandbox to report both runs',
  );
  await runner.stop();
  return sandbox!;
}

t.test("one organization's code leaves nothing for another's in the context they share", async (t) => {
  const sandbox = await markThenLook(t);
  // One context made (the isolate's first), and bob's run found it kept: with a context per
  // organization it would have made a second (the next test).
  t.match(sandbox, { isolatesLive: 1, contextsMade: 1 }, 'one context served both organizations');
  t.ok(sandbox.contextsReused >= 1, "bob's run reused the context mallory's ran in");
});

t.test('RUNNER_CODE_CONTEXTS=organization gives each organization contexts of its own', async (t) => {
  const sandbox = await markThenLook(t, 'tenant');
  t.match(sandbox, { isolatesLive: 1, contextsReused: 0 }, "bob's run did not reuse mallory's context");
  t.ok(sandbox.contextsMade >= 2, `a context per organization (${sandbox.contextsMade} made)`);
});
