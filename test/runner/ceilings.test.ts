/**
 * The run limits of the specification's "Limits during a run", through the API: each ceiling's
 * flow.error event (exact attributes), the execution's error, and that no failure route recovers
 * it; code_run_seconds taking the failure route; ctx.objects.put checked against the value the
 * execution started with.
 */
import t, { type Test } from 'tap';
import { buildTestApp, setOverride, signInAnonymous } from '../helpers/app.ts';
import {
  command,
  createWorkflow,
  executionEvents,
  runGraph,
  runningHeld,
  startEngine,
  waitForEnd,
  waitForStatus,
  type Workflow,
} from '../helpers/runner.ts';

const { app, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);
await startEngine(t, databaseUrl);

function code(source: string, routes?: Record<string, string | null>): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source }, ...(routes ? { routes } : {}) };
}

const RESCUE = code('export default (input) => ({ rescued: input.error })');

async function run(
  flow: Workflow,
  graph: unknown,
  input?: unknown,
): Promise<{ execution: Record<string, any>; events: any[] }> {
  const created = await runGraph(app, alice, flow, graph, input);
  const execution = await waitForEnd(app, alice, flow, created.id);
  return { execution, events: await executionEvents(app, alice, flow, created.id) };
}

/** The flow.error event and the execution's end, as the specification states them. */
function assertFlowError(
  t: Test,
  run: { execution: Record<string, any>; events: any[] },
  node: string,
  limit: { id: string; value: number },
  message: RegExp,
): void {
  const { execution, events } = run;
  t.equal(execution.status, 'failed');
  t.same(Object.keys(execution.error).sort(), ['code', 'limit', 'message']);
  t.equal(execution.error.code, 'limit_exceeded');
  t.same(execution.error.limit, limit);
  t.match(execution.error.message, message);
  const flowErrors = events.filter((event) => event.kind === 'flow.error');
  t.equal(flowErrors.length, 1, 'one flow.error');
  t.equal(flowErrors[0].node, node);
  t.same(flowErrors[0].attributes, { error: 'limit_exceeded', limit });
  t.same(
    events.slice(-2).map((event) => event.kind),
    ['flow.error', 'execution.finished'],
    'nothing runs after flow.error',
  );
  t.same(events.at(-1).attributes.status, 'failed');
  t.notOk(
    events.some((event) => event.node === 'rescue'),
    'no failure route recovers it',
  );
}

t.test('workflow.processor_runs_per_execution: the run that would pass it does not start', async (t) => {
  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.processor_runs_per_execution', 'blob', flow.blobId, 3);
  const result = await run(
    flow,
    {
      start: 'loop',
      nodes: {
        loop: code('export default (input, ctx) => ctx.route("again", { i: input.i + 1 })', {
          again: 'loop',
          failure: 'rescue',
        }),
        rescue: RESCUE,
      },
    },
    { i: 0 },
  );
  assertFlowError(
    t,
    result,
    'loop',
    { id: 'workflow.processor_runs_per_execution', value: 3 },
    /workflow\.processor_runs_per_execution/,
  );
  t.equal(result.execution.node_runs, 3);
  t.equal(
    result.events.filter((event) => event.kind === 'node.started').length,
    3,
    'three runs started, the fourth did not',
  );
  t.equal(result.events.filter((event) => event.kind === 'node.finished').length, 3);
  t.same(result.execution.limits['workflow.processor_runs_per_execution'], 3);
  t.equal(await runningHeld(app, alice, flow.orgId), 0);
});

t.test('workflow.execution_seconds is checked before every node run', async (t) => {
  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.execution_seconds', 'blob', flow.blobId, 1);
  // Each pass busies itself for 400 ms, so some pass starts past the one-second deadline.
  const result = await run(
    flow,
    {
      start: 'slow',
      nodes: {
        slow: code(
          'export default (input, ctx) => { const end = Date.now() + 400; while (Date.now() < end) {} return ctx.route("again", { i: input.i + 1 }) }',
          { again: 'slow', failure: 'rescue' },
        ),
        rescue: RESCUE,
      },
    },
    { i: 0 },
  );
  assertFlowError(t, result, 'slow', { id: 'workflow.execution_seconds', value: 1 }, /workflow\.execution_seconds/);
  const started = result.events.filter((event) => event.kind === 'node.started').length;
  t.ok(started >= 2, 'it ran until the deadline');
  t.equal(
    result.events.filter((event) => event.kind === 'node.finished').length,
    started,
    'every node that started finished; the next did not start',
  );
});

t.test('logic.sleep that would end past the deadline fails the execution at once', async (t) => {
  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.execution_seconds', 'blob', flow.blobId, 30);
  const result = await run(flow, {
    start: 'nap',
    nodes: { nap: { processor: 'logic.sleep', config: { seconds: 3600 } } },
  });
  assertFlowError(
    t,
    result,
    'nap',
    { id: 'workflow.execution_seconds', value: 30 },
    /would end past the execution's deadline/,
  );
  t.notOk(
    result.events.some((event) => event.kind === 'execution.sleeping'),
    'it never slept',
  );
  t.equal(await runningHeld(app, alice, flow.orgId), 0);
});

t.test('logic.sleep longer than workflow.sleep_seconds fails without waiting', async (t) => {
  const flow = await createWorkflow(app, alice);
  const definition = await command(app, alice, flow.rev, 'create_definition', {
    category: 'workflow',
    graph: { start: 'nap', nodes: { nap: { processor: 'logic.sleep', config: { seconds: 43_201 } } } },
  });
  t.equal(definition.warnings[0]?.code, 'fails_at_run_time', 'create_definition warned');
  const created = (
    await command(app, alice, flow.rev, 'create_execution', {
      session_id: flow.sessionId,
      definition_id: definition.definition.id,
    })
  ).execution;
  const execution = await waitForEnd(app, alice, flow, created.id);
  const events = await executionEvents(app, alice, flow, created.id);
  assertFlowError(
    t,
    { execution, events },
    'nap',
    { id: 'workflow.sleep_seconds', value: 43_200 },
    /longer than workflow\.sleep_seconds/,
  );
  t.notOk(events.some((event) => event.kind === 'execution.sleeping'));
});

t.test(
  'workflow.code_run_seconds stops the run; the node takes its failure route with a message naming the limit',
  async (t) => {
    const flow = await createWorkflow(app, alice);
    await setOverride(app, 'workflow.code_run_seconds', 'blob', flow.blobId, 1);
    const expected = {
      code: 'code_timeout',
      message: 'The code ran longer than workflow.code_run_seconds (1 s) and was stopped.',
      limit: { id: 'workflow.code_run_seconds', value: 1 },
    };
    // A promise that can never settle fails at once instead (test/runner/tenant-isolation.test.ts);
    // one that keeps the isolate busy with microtasks runs into the limit.
    for (const source of [
      'export default () => { for (;;) {} }',
      'export default async () => { for (;;) await null }',
    ]) {
      const result = await run(flow, {
        start: 'spin',
        nodes: { spin: code(source, { failure: 'rescue' }), rescue: RESCUE },
      });
      t.equal(result.execution.status, 'succeeded', source);
      t.same(result.execution.output, { rescued: expected });
      t.same(result.events.find((event) => event.kind === 'node.failed')?.attributes.error, expected);
    }
    const unrescued = await run(flow, { start: 'spin', nodes: { spin: code('export default () => { for (;;) {} }') } });
    t.equal(unrescued.execution.status, 'failed');
    t.same(unrescued.execution.error, expected);
  },
);

t.test('a memory bomb fails its node (code_memory) and the failure route applies', async (t) => {
  const flow = await createWorkflow(app, alice);
  const result = await run(flow, {
    start: 'bomb',
    nodes: {
      bomb: code(
        'export default () => { const a = []; for (;;) a.push({ x: a.length, s: "y".repeat(100) + a.length }) }',
        { failure: 'rescue' },
      ),
      rescue: RESCUE,
    },
  });
  t.equal(result.execution.status, 'succeeded');
  t.equal(result.execution.output.rescued.code, 'code_memory');
});

t.test(
  'ctx.objects.put raises LimitExceeded at the session_objects_per_session value the execution started with',
  async (t) => {
    const flow = await createWorkflow(app, alice);
    await setOverride(app, 'workflow.session_objects_per_session', 'blob', flow.blobId, 1);
    const created = await runGraph(app, alice, flow, {
      start: 'nap',
      nodes: {
        nap: { processor: 'logic.sleep', config: { seconds: 1 }, routes: { success: 'put' } },
        put: code(`export default async (input, ctx) => {
        await ctx.objects.put('first', { n: 1 });
        await ctx.objects.put('first', { n: 2 });
        try {
          await ctx.objects.put('second', 2);
          return { stored: 'both' };
        } catch (error) {
          return { name: error.name, code: error.code, limit: error.limit, isLimitExceeded: error instanceof ctx.LimitExceeded, first: await ctx.objects.get('first') };
        }
      }`),
      },
    });
    t.same(created.limits['workflow.session_objects_per_session'], 1);
    // Raised while the execution sleeps: the run keeps the value it started with.
    await waitForStatus(app, alice, flow, created.id, 'sleeping');
    await setOverride(app, 'workflow.session_objects_per_session', 'blob', flow.blobId, 10);
    const execution = await waitForEnd(app, alice, flow, created.id);
    t.equal(execution.status, 'succeeded');
    t.same(execution.output, {
      name: 'LimitExceeded',
      code: 'limit_exceeded',
      limit: { id: 'workflow.session_objects_per_session', value: 1, held: 1 },
      isLimitExceeded: true,
      first: { n: 2 },
    });
    // A REST write is checked against the value in force when it arrives.
    const upload = await command(app, alice, flow.rev, 'upload_session_object', {
      session_id: flow.sessionId,
      alias: 'second',
      value: 2,
    });
    t.equal(upload.object.alias, 'second');

    const objects = (await command(app, alice, flow.rev, 'list_session_objects', { session_id: flow.sessionId }))
      .objects;
    t.same(
      objects.map((object: any) => object.alias),
      ['first', 'second'],
    );
    const sessionEvents = (await command(app, alice, flow.rev, 'list_session_events', { session_id: flow.sessionId }))
      .events;
    const written = sessionEvents.filter(
      (event: any) => event.kind === 'object.written' && event.execution_id === created.id,
    );
    t.equal(written.length, 2, "the run's two writes are recorded as the execution's");
    t.equal(written[0].node, 'put');
  },
);

t.test('an uncaught LimitExceeded fails the node with the limit object', async (t) => {
  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.session_objects_per_session', 'blob', flow.blobId, 0);
  const { execution } = await run(flow, {
    start: 'put',
    nodes: { put: code('export default async (input, ctx) => { await ctx.objects.put("xyz", 1) }') },
  });
  t.equal(execution.status, 'failed');
  t.same(execution.error, {
    code: 'limit_exceeded',
    message: 'Limit workflow.session_objects_per_session is 0 and 0 are held.',
    limit: { id: 'workflow.session_objects_per_session', value: 0, held: 0 },
  });
});

t.test('ctx.thread, ctx.graph and ctx.objects.list write and read the session through the command paths', async (t) => {
  const flow = await createWorkflow(app, alice);
  const { execution } = await run(flow, {
    start: 'io',
    nodes: {
      io: code(`export default async (input, ctx) => {
        await ctx.objects.put('a-obj', { v: 1 });
        const item = await ctx.thread.post({ text: 'hello', data: { from: ctx.ids.node } });
        await ctx.graph.mutate([{ op: 'upsert_node', id: 'n1', label: 'person' }, { op: 'upsert_node', id: 'n2', label: 'person' }, { op: 'upsert_edge', id: 'e1', label: 'knows', source: 'n1', target: 'n2' }]);
        const graph = await ctx.graph.query({ start: { ids: ['n1'] }, steps: [{ direction: 'out', edge_label: 'knows' }] });
        const listed = await ctx.objects.list({ limit: 10 });
        let tooBig;
        try { await ctx.thread.post({ text: 'x'.repeat(70000) }) } catch (error) { tooBig = { code: error.code, limit: error.limit } }
        return { thread: item.thread, text: item.text, nodes: graph.nodes.map((n) => n.id).sort(), listed: listed.objects.map((o) => o.alias), cursor: listed.cursor, tooBig };
      }`),
    },
  });
  t.equal(execution.status, 'succeeded');
  t.same(execution.output, {
    thread: 'main',
    text: 'hello',
    nodes: ['n1', 'n2'],
    listed: ['a-obj'],
    cursor: null,
    tooBig: { code: 'thread_item_too_large', limit: { id: 'workflow.thread_item_bytes', value: 65_536 } },
  });
  const items = (await command(app, alice, flow.rev, 'list_session_thread_items', { session_id: flow.sessionId }))
    .thread_items;
  t.equal(items.length, 1);
  t.match(items[0], { text: 'hello', data: { from: 'io' } });
});
