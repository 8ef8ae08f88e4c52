/**
 * The interpreter through the API: executions created with create_execution, run by an in-process
 * runner engine, observed with get_execution, list_execution_events, list_session_events and the
 * organization's running count.
 */
import t from 'tap';
import { buildTestApp, setOverride, signInAnonymous } from '../helpers/app.ts';
import {
  command,
  createWorkflow,
  executionEvents,
  runGraph,
  runningHeld,
  startEngine,
  waitForEnd,
  type Workflow,
} from '../helpers/runner.ts';

const { app, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);
await startEngine(t, databaseUrl);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function code(source: string, routes?: Record<string, string | null>): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source }, ...(routes ? { routes } : {}) };
}

/** Runs `graph` on `input` in a fresh workflow and waits for the end. */
async function run(
  graph: unknown,
  input?: unknown,
  flow?: Workflow,
): Promise<{ flow: Workflow; execution: Record<string, any>; events: any[] }> {
  const workflow = flow ?? (await createWorkflow(app, alice));
  const created = await runGraph(app, alice, workflow, graph, input);
  const execution = await waitForEnd(app, alice, workflow, created.id);
  return { flow: workflow, execution, events: await executionEvents(app, alice, workflow, created.id) };
}

function kinds(events: any[]): string[] {
  return events.map((event) => (event.node ? `${event.kind}:${event.node}` : event.kind));
}

t.test('a three-node workflow runs to succeeded, each output the next input, with timed events in order', async (t) => {
  const flow = await createWorkflow(app, alice);
  const graph = {
    start: 'add',
    nodes: {
      add: code('export default (input) => ({ n: input.n + 1, trail: ["add"] })', { success: 'double' }),
      double: code('export default (input) => ({ n: input.n * 2, trail: [...input.trail, "double"] })', {
        success: 'label',
      }),
      label: code(
        'export default (input, ctx) => { ctx.log("labelling", input.n); return { label: `n=${input.n}`, trail: [...input.trail, "label"] } }',
      ),
    },
  };
  const { execution, events } = await run(graph, { n: 4 }, flow);
  t.equal(execution.status, 'succeeded');
  t.same(execution.output, { label: 'n=10', trail: ['add', 'double', 'label'] });
  t.equal(execution.error, null);
  t.equal(execution.node_runs, 3);
  t.match(execution.started_at, ISO);
  t.match(execution.ended_at, ISO);

  t.same(kinds(events), [
    'execution.started',
    'node.started:add',
    'node.finished:add',
    'node.started:double',
    'node.finished:double',
    'node.started:label',
    'node.finished:label',
    'execution.finished',
  ]);
  for (const event of events) {
    t.match(event, { execution_id: execution.id, session_id: flow.sessionId, at: ISO });
  }
  const times = events.map((event) => Date.parse(event.at));
  t.same(
    times,
    [...times].sort((a, b) => a - b),
    'events are in time order',
  );
  const ids = events.map((event) => Number(event.id));
  t.same(
    ids,
    [...ids].sort((a, b) => a - b),
    'ids ascend',
  );
  t.same(events[1].attributes, { processor: 'logic.code' });
  for (const finished of events.filter((event) => event.kind === 'node.finished')) {
    t.equal(finished.attributes.route, 'success');
    t.ok(Number.isInteger(finished.attributes.duration_ms) && finished.attributes.duration_ms >= 0, 'duration_ms');
  }
  t.same(events[6].attributes.logs, [{ level: 'info', message: 'labelling 10' }], 'ctx.log lands in the node event');
  // Every run's input and output, the middle one's too: each output is the next run's input.
  t.same(
    events
      .filter((event) => event.kind === 'node.finished')
      .map((event) => [event.attributes.input, event.attributes.output]),
    [
      [{ n: 4 }, { n: 5, trail: ['add'] }],
      [
        { n: 5, trail: ['add'] },
        { n: 10, trail: ['add', 'double'] },
      ],
      [
        { n: 10, trail: ['add', 'double'] },
        { label: 'n=10', trail: ['add', 'double', 'label'] },
      ],
    ],
    "each node run's input and output in its node.finished",
  );
  t.match(events[7].attributes, { status: 'succeeded', duration_ms: Number });

  const sessionEvents = (await command(app, alice, flow.rev, 'list_session_events', { session_id: flow.sessionId }))
    .events;
  t.same(
    sessionEvents
      .filter((event: any) => event.execution_id === execution.id)
      .map((event: any) => [event.kind, event.attributes]),
    [
      ['execution.created', { execution_id: execution.id, definition_id: execution.definition_id }],
      ['execution.finished', { execution_id: execution.id, status: 'succeeded' }],
    ],
  );
  t.equal(await runningHeld(app, alice, flow.orgId), 0, 'the running count is back to 0');
});

t.test('routes', async (t) => {
  t.test('a throw takes the failure route, whose node gets {error, input}', async (t) => {
    const { execution, events } = await run(
      {
        start: 'boom',
        nodes: {
          boom: code('export default (input) => { throw new TypeError("bad " + input.x) }', { failure: 'rescue' }),
          rescue: code('export default (input) => ({ rescued: input })'),
        },
      },
      { x: 1 },
    );
    t.equal(execution.status, 'succeeded');
    t.same(execution.output, {
      rescued: { error: { code: 'code_error', message: 'TypeError: bad 1' }, input: { x: 1 } },
    });
    t.same(kinds(events), [
      'execution.started',
      'node.started:boom',
      'node.failed:boom',
      'node.started:rescue',
      'node.finished:rescue',
      'execution.finished',
    ]);
    t.match(events[2].attributes, { error: { code: 'code_error', message: 'TypeError: bad 1' }, duration_ms: Number });
    t.same(events[2].attributes.input, { x: 1 }, "the failed run's input in its node.failed");
    t.same(
      events[4].attributes.input,
      execution.output.rescued,
      "the failure route's node got what failed and on what",
    );
  });

  t.test('a failure without a failure route ends the execution failed with the node error', async (t) => {
    const { flow, execution, events } = await run({
      start: 'boom',
      nodes: { boom: code('export default () => { throw new Error("no") }') },
    });
    t.equal(execution.status, 'failed');
    t.same(execution.error, { code: 'code_error', message: 'Error: no' });
    t.equal(execution.output, null);
    t.same(kinds(events), ['execution.started', 'node.started:boom', 'node.failed:boom', 'execution.finished']);
    t.same(events[3].attributes.status, 'failed');
    t.equal(await runningHeld(app, alice, flow.orgId), 0);
  });

  t.test('ctx.route takes a named route with its output', async (t) => {
    const { execution, events } = await run(
      {
        start: 'pick',
        nodes: {
          pick: code('export default (input, ctx) => ctx.route(input.go, { side: input.go })', {
            left: 'l',
            right: 'r',
          }),
          l: code('export default (input) => ({ went: "left", ...input })'),
          r: code('export default (input) => ({ went: "right", ...input })'),
        },
      },
      { go: 'right' },
    );
    t.same(execution.output, { went: 'right', side: 'right' });
    t.same(events[2].attributes.route, 'right');
  });

  t.test('a route the node does not list ends the execution succeeded with the output', async (t) => {
    const { execution } = await run({
      start: 'pick',
      nodes: { pick: code('export default (input, ctx) => ctx.route("elsewhere", { at: 1 })', { left: null }) },
    });
    t.equal(execution.status, 'succeeded');
    t.same(execution.output, { at: 1 });
  });

  t.test('taking the failure route by name where it leads nowhere ends the execution failed', async (t) => {
    const { execution, events } = await run({
      start: 'pick',
      nodes: { pick: code('export default (input, ctx) => ctx.route("failure", { why: "chosen" })') },
    });
    t.equal(execution.status, 'failed');
    t.same(execution.error, {
      code: 'failure_route',
      message: 'Node "pick" took the failure route, which leads nowhere.',
    });
    t.same(events[2].attributes.route, 'failure');
  });

  t.test('logic.switch routes on the input: first matching case, else the default route', async (t) => {
    const graph = {
      start: 'sw',
      nodes: {
        sw: {
          processor: 'logic.switch',
          config: {
            cases: [
              {
                when: [
                  { path: 'order.total', gte: 100 },
                  { path: 'tier', equals: 'gold' },
                ],
                route: 'vip',
              },
              { when: { path: 'order.total', gte: 100 }, route: 'big' },
            ],
            default: 'normal',
          },
          routes: { vip: 'vip', big: 'big', normal: 'normal' },
        },
        vip: code('export default (input) => "vip"'),
        big: code('export default (input) => "big"'),
        normal: code('export default (input) => "normal:" + input.order.total'),
      },
    };
    const flow = await createWorkflow(app, alice);
    t.equal((await run(graph, { order: { total: 150 }, tier: 'gold' }, flow)).execution.output, 'vip');
    t.equal((await run(graph, { order: { total: 150 }, tier: 'silver' }, flow)).execution.output, 'big');
    const normal = await run(graph, { order: { total: 5 } }, flow);
    t.equal(normal.execution.output, 'normal:5');
    t.same(normal.events[2].attributes, {
      route: 'normal',
      duration_ms: normal.events[2].attributes.duration_ms,
      input: { order: { total: 5 } },
      output: { order: { total: 5 } },
    });
  });

  t.test("a run's value past NODE_RUN_VALUE_BYTES is kept as its first bytes and its size", async (t) => {
    const { execution, events } = await run({
      start: 'big',
      nodes: {
        big: code('export default () => "é".repeat(9000)', { success: 'small' }),
        small: code('export default () => 1'),
      },
    });
    t.equal(execution.status, 'succeeded');
    const [big, small] = events.filter((event) => event.kind === 'node.finished').map((event) => event.attributes);
    // 9,000 two-byte characters and two quotes: 18,002 bytes of JSON, cut at 16,384.
    t.same(big.input, null, 'a small input is kept whole');
    t.notOk('output' in big, 'the large output is not kept whole');
    t.equal(big.output_bytes, 18_002);
    t.equal(big.output_preview, `"${'é'.repeat(8191)}\uFFFD`, 'its first 16,384 bytes, the cut character as U+FFFD');
    t.equal(small.input_bytes, 18_002, "the next run's input likewise");
    t.equal(small.output, 1);
  });

  t.test('a loop runs until the code leaves it; every pass is a node run', async (t) => {
    const { execution, events } = await run(
      {
        start: 'count',
        nodes: {
          count: code(
            'export default (input, ctx) => input.i < 4 ? ctx.route("again", { i: input.i + 1 }) : { done: input.i }',
            { again: 'count' },
          ),
        },
      },
      { i: 0 },
    );
    t.same(execution.output, { done: 4 });
    t.equal(execution.node_runs, 5);
    t.equal(events.filter((event) => event.kind === 'node.started').length, 5);
  });

  t.test('logic.sleep of 0 seconds passes its input on without parking', async (t) => {
    const { execution, events } = await run(
      {
        start: 'nap',
        nodes: {
          nap: { processor: 'logic.sleep', config: { seconds: 0 }, routes: { success: 'after' } },
          after: code('export default (input) => input'),
        },
      },
      { kept: true },
    );
    t.same(execution.output, { kept: true });
    t.notOk(events.some((event) => event.kind === 'execution.sleeping'));
  });
});

t.test("logic.code imports only what the execution's stored workflow.code_imports grants", async (t) => {
  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.code_imports', 'blob', flow.blobId, ['@ws/uuid']);
  const graph = {
    start: 'id',
    nodes: { id: code('import { validate, v4 } from "@ws/uuid"; export default () => ({ valid: validate(v4()) })') },
  };
  const definition = (await command(app, alice, flow.rev, 'create_definition', { category: 'workflow', graph }))
    .definition;
  const create = async () =>
    (
      await command(app, alice, flow.rev, 'create_execution', {
        session_id: flow.sessionId,
        definition_id: definition.id,
      })
    ).execution;

  const granted = await create();
  t.same((await waitForEnd(app, alice, flow, granted.id)).output, { valid: true });
  t.same(granted.limits['workflow.code_imports'], ['@ws/uuid']);

  // Withdrawn: executions created from now on resolve the empty list and are refused at run time.
  await setOverride(app, 'workflow.code_imports', 'blob', flow.blobId, []);
  const refused = await waitForEnd(app, alice, flow, (await create()).id);
  t.equal(refused.status, 'failed');
  t.equal(refused.error.code, 'import_refused');
  t.match(refused.error.message, /@ws\/uuid/);
});
