import { DEFAULT_SESSION_GRAPH_BOUNDS } from '../../shared/graph/session-graph-usage.ts';
import t from 'tap';
import type { Db } from '../../shared/db/db.ts';
import { graphMutate } from '../../runner/processors/graph-mutate.ts';
import { objectPut } from '../../runner/processors/object-put.ts';
import type { NodeResult, RunContext, RunLimits } from '../../runner/processors/processor.ts';
import { threadPost } from '../../runner/processors/thread-post.ts';
import { buildTestApp, call, setOverride, signInAnonymous } from '../helpers/app.ts';
import { createBlob, createOrg } from '../helpers/resources.ts';
import { command, createWorkflow, executionEvents, runGraph, startEngine, waitForEnd } from '../helpers/runner.ts';
import { markDeleting } from '../helpers/session-contents.ts';

// Unit level: each processor's `run` called directly against a real database, its effects read
// back through the public listing commands. The end-to-end runs through the engine follow below.

const { app, db, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const org = await createOrg(app, alice);
// Every scene creates one (never run) execution: keep the organization's running quota out of the way.
await setOverride(app, 'workflow.running_executions_per_org', 'org', org.id, 1000);

const OBJECT_BYTES = 5_242_880;
const THREAD_ITEM_BYTES = 65_536;

/** A command over REST that must succeed; returns the body. */
async function ok(revisionId: string, command: string, params: Record<string, unknown>): Promise<any> {
  const res = await call(app, 'POST', `/v1/revisions/${revisionId}/${command}`, { as: alice, body: params });
  if (res.status !== 200) throw new Error(`${command}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

interface Scene {
  blobId: string;
  revisionId: string;
  sessionId: string;
  executionId: string;
}

const ANY_GRAPH = {
  start: 'a',
  nodes: { a: { processor: 'logic.switch', config: { cases: [{ when: { path: 'x', exists: true }, route: 'x' }] } } },
};

/** A fresh workflow blob with a session and a (queued, never run) execution whose id the writes carry. */
async function scene(): Promise<Scene> {
  const { blob, revision } = await createBlob(app, alice, org.id);
  const session = (await ok(revision.id, 'create_session', {})).session;
  const definition = (await ok(revision.id, 'create_definition', { category: 'workflow', graph: ANY_GRAPH }))
    .definition;
  const execution = (
    await ok(revision.id, 'create_execution', { session_id: session.id, definition_id: definition.id })
  ).execution;
  return { blobId: blob.id, revisionId: revision.id, sessionId: session.id, executionId: execution.id };
}

const LIMITS: RunLimits = {
  'workflow.processor_runs_per_execution': 1000,
  'workflow.execution_seconds': 86_400,
  'workflow.code_run_seconds': 870,
  'workflow.code_imports': [],
  'workflow.session_objects_per_session': 1000,
};

/** A RunContext built by hand, as the engine builds it for node `node` of the scene's execution. */
function contextOf(s: Scene, node: string, limits: Partial<RunLimits> = {}, database: Db = db): RunContext {
  return {
    db: database,
    execution: {
      id: s.executionId,
      sessionId: s.sessionId,
      orgId: org.id,
      blobId: s.blobId,
      revisionId: s.revisionId,
      limits: { ...LIMITS, ...limits },
    },
    node,
    signal: new AbortController().signal,
    graphBounds: DEFAULT_SESSION_GRAPH_BOUNDS,
  };
}

async function objects(s: Scene): Promise<any[]> {
  return (await ok(s.revisionId, 'list_session_objects', { session_id: s.sessionId })).objects;
}

async function threadItems(s: Scene): Promise<any[]> {
  return (await ok(s.revisionId, 'list_session_thread_items', { session_id: s.sessionId })).thread_items;
}

async function elements(s: Scene): Promise<any[]> {
  return (await ok(s.revisionId, 'list_session_graph_elements', { session_id: s.sessionId })).elements;
}

/** The session events of `kind`, through list_session_events. */
async function events(s: Scene, kind: string): Promise<any[]> {
  const listed = (await ok(s.revisionId, 'list_session_events', { session_id: s.sessionId, limit: 200 })).events;
  return listed.filter((e: any) => e.kind === kind);
}

const passedOn = (input: unknown): NodeResult => ({ kind: 'route', route: 'success', output: input });

// ---- object.put -------------------------------------------------------------------------------

t.test('object.put writes `value`, or the input with from_input, and passes the input on', async (t) => {
  const s = await scene();
  const input = { order: 7 };
  t.same(
    await objectPut.run(contextOf(s, 'save'), { alias: 'settings', value: { currency: 'EUR' } }, input),
    passedOn(input),
  );
  t.same(await objectPut.run(contextOf(s, 'keep'), { alias: 'last-order', from_input: true }, input), passedOn(input));
  // `value: null` is a value like any other.
  t.same(await objectPut.run(contextOf(s, 'clear'), { alias: 'nothing', value: null }, 'ignored'), passedOn('ignored'));

  t.same(
    (await objects(s)).map((o) => [o.alias, o.value]),
    [
      ['settings', { currency: 'EUR' }],
      ['last-order', { order: 7 }],
      ['nothing', null],
    ],
  );
  const written = await events(s, 'object.written');
  t.same(
    written.map((e) => [e.execution_id, e.node, e.attributes.alias, e.attributes.created]),
    [
      [s.executionId, 'save', 'settings', true],
      [s.executionId, 'keep', 'last-order', true],
      [s.executionId, 'clear', 'nothing', true],
    ],
    'each write is one object.written event naming the execution and node',
  );
});

t.test('object.put is held to the quota value the execution started with, not the one in force', async (t) => {
  // In force for the blob: 1. The execution resolved 2 when it was created (simulated by its limits map).
  const s = await scene();
  await setOverride(app, 'workflow.session_objects_per_session', 'blob', s.blobId, 1);
  const ctx = contextOf(s, 'put', { 'workflow.session_objects_per_session': 2 });
  t.same(await objectPut.run(ctx, { alias: 'one', value: 1 }, null), passedOn(null));
  t.same(
    await objectPut.run(ctx, { alias: 'two', value: 2 }, null),
    passedOn(null),
    'past the value in force, within the stored one',
  );

  const refused = await objectPut.run(ctx, { alias: 'three', value: 3 }, { keep: true });
  t.same(refused, {
    kind: 'failure',
    error: {
      code: 'limit_exceeded',
      message: 'Limit workflow.session_objects_per_session is 2 and 2 are held.',
      limit: { id: 'workflow.session_objects_per_session', value: 2, held: 2 },
    },
  });
  t.same(
    await objectPut.run(ctx, { alias: 'two', value: 'again' }, null),
    passedOn(null),
    'replacing an alias takes no slot',
  );
  t.same(
    (await objects(s)).map((o) => [o.alias, o.value]),
    [
      ['one', 1],
      ['two', 'again'],
    ],
  );

  // The other way round: in force 100, stored 1.
  const other = await scene();
  await setOverride(app, 'workflow.session_objects_per_session', 'blob', other.blobId, 100);
  const low = contextOf(other, 'put', { 'workflow.session_objects_per_session': 1 });
  t.same(await objectPut.run(low, { alias: 'one', value: 1 }, null), passedOn(null));
  const lowRefused = await objectPut.run(low, { alias: 'two', value: 2 }, null);
  t.equal(lowRefused.kind, 'failure');
  t.same(lowRefused.kind === 'failure' && lowRefused.error.limit, {
    id: 'workflow.session_objects_per_session',
    value: 1,
    held: 1,
  });
  t.equal((await objects(other)).length, 1);
});

t.test('object.put refuses a value past workflow.session_object_bytes with session_object_too_large', async (t) => {
  const s = await scene();
  const exact = 'a'.repeat(OBJECT_BYTES - 2);
  t.same(
    await objectPut.run(contextOf(s, 'put'), { alias: 'exact', from_input: true }, exact),
    passedOn(exact),
    'exactly the ceiling is accepted',
  );
  const over = await objectPut.run(contextOf(s, 'put'), { alias: 'over', value: 'a'.repeat(OBJECT_BYTES - 1) }, null);
  t.same(over, {
    kind: 'failure',
    error: {
      code: 'session_object_too_large',
      message: `The object is ${OBJECT_BYTES + 1} bytes serialized; workflow.session_object_bytes is ${OBJECT_BYTES}.`,
      limit: { id: 'workflow.session_object_bytes', value: OBJECT_BYTES },
    },
  });
  t.same(
    (await objects(s)).map((o) => o.alias),
    ['exact'],
  );
  t.equal((await events(s, 'object.written')).length, 1, 'a refused write leaves no event');
});

t.test('object.put fails without a limit when the session is being deleted', async (t) => {
  const s = await scene();
  await markDeleting(app, s.sessionId);
  t.same(await objectPut.run(contextOf(s, 'put'), { alias: 'late', value: 1 }, null), {
    kind: 'failure',
    error: { code: 'conflict', message: 'The session is being deleted.' },
  });
});

// ---- thread.post ------------------------------------------------------------------------------

t.test('thread.post posts text, data or the input, to `main` or a named thread, and passes the input on', async (t) => {
  const s = await scene();
  const input = { total: 12 };
  t.same(
    await threadPost.run(contextOf(s, 'note'), { text: 'order received' }, input),
    passedOn(input),
    'text only: the input is not posted',
  );
  t.same(await threadPost.run(contextOf(s, 'raw'), { thread: 'alerts' }, input), passedOn(input));
  t.same(await threadPost.run(contextOf(s, 'both'), { text: 'see data', data: [1, 2] }, input), passedOn(input));
  t.same(await threadPost.run(contextOf(s, 'nulled'), { text: 'no data', data: null }, input), passedOn(input));

  const items = await threadItems(s);
  t.same(
    items.map((i) => [i.thread, i.text, i.data, i.files, i.author_id, i.execution_id]),
    [
      ['main', 'order received', null, [], null, s.executionId],
      ['alerts', null, { total: 12 }, [], null, s.executionId],
      ['main', 'see data', [1, 2], [], null, s.executionId],
      ['main', 'no data', null, [], null, s.executionId],
    ],
  );
  const posted = await events(s, 'thread.item_posted');
  t.same(
    posted.map((e) => [e.execution_id, e.node, e.attributes.thread]),
    [
      [s.executionId, 'note', 'main'],
      [s.executionId, 'raw', 'alerts'],
      [s.executionId, 'both', 'main'],
      [s.executionId, 'nulled', 'main'],
    ],
  );
});

t.test('thread.post names session files', async (t) => {
  const s = await scene();
  const upload = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${s.revisionId}/upload_session_file`,
    headers: {
      ...alice.headers,
      'content-type': 'application/octet-stream',
      'x-request-body': JSON.stringify({ session_id: s.sessionId, alias: 'invoice-pdf' }),
    },
    payload: Buffer.from('%PDF-1.7'),
  });
  t.equal(upload.statusCode, 200);
  t.same(await threadPost.run(contextOf(s, 'post'), { text: 'invoice', files: ['invoice-pdf'] }, null), passedOn(null));
  t.same(
    (await threadItems(s)).map((i) => i.files),
    [['invoice-pdf']],
  );

  const unknown = await threadPost.run(contextOf(s, 'post'), { text: 'x', files: ['invoice-pdf', 'nope-file'] }, null);
  t.same(unknown, {
    kind: 'failure',
    error: { code: 'invalid_request_body', message: 'Not a file of this session: "nope-file".' },
  });
});

t.test('thread.post refusals: too_many_files, thread_item_too_large, an empty item', async (t) => {
  const s = await scene();
  const eleven = Array.from({ length: 11 }, (_, i) => `file-${i}`);
  t.same(await threadPost.run(contextOf(s, 'post'), { text: 'x', files: eleven }, null), {
    kind: 'failure',
    error: {
      code: 'too_many_files',
      message: 'The item names 11 files; workflow.thread_item_files is 10.',
      limit: { id: 'workflow.thread_item_files', value: 10 },
    },
  });

  // {"text":null,"data":"…","files":[]} is 34 bytes plus the string's characters.
  const fits = 'a'.repeat(THREAD_ITEM_BYTES - 34);
  t.same(await threadPost.run(contextOf(s, 'post'), {}, fits), passedOn(fits), 'exactly the ceiling is accepted');
  const tooBig = `${fits}a`;
  t.same(await threadPost.run(contextOf(s, 'post'), {}, tooBig), {
    kind: 'failure',
    error: {
      code: 'thread_item_too_large',
      message: `The item is ${THREAD_ITEM_BYTES + 1} bytes serialized; workflow.thread_item_bytes is ${THREAD_ITEM_BYTES}.`,
      limit: { id: 'workflow.thread_item_bytes', value: THREAD_ITEM_BYTES },
    },
  });

  t.same(
    await threadPost.run(contextOf(s, 'post'), {}, null),
    {
      kind: 'failure',
      error: { code: 'invalid_request_body', message: 'A thread item needs text, data or files.' },
    },
    'a null input with nothing else set is an empty item',
  );
  t.equal((await threadItems(s)).length, 1, 'only the post that fit was stored');
  t.equal((await events(s, 'thread.item_posted')).length, 1);
});

// ---- graph.mutate -----------------------------------------------------------------------------

t.test('graph.mutate applies `mutations`, or the input with from_input, and passes the input on', async (t) => {
  const s = await scene();
  const mutations = [
    { op: 'upsert_node' as const, id: 'alice', label: 'person', properties: { age: 31 } },
    { op: 'upsert_node' as const, id: 'bob', label: 'person' },
    { op: 'upsert_edge' as const, id: 'e1', label: 'knows', source: 'alice', target: 'bob' },
  ];
  t.same(await graphMutate.run(contextOf(s, 'build'), { mutations }, { n: 1 }), passedOn({ n: 1 }));
  const fromInput = [
    { op: 'delete', id: 'bob' },
    { op: 'upsert_node', id: 'carol', label: 'person' },
  ];
  t.same(await graphMutate.run(contextOf(s, 'apply'), { from_input: true }, fromInput), passedOn(fromInput));

  t.same(
    await elements(s),
    [
      { id: 'alice', kind: 'node', label: 'person', properties: { age: 31 } },
      { id: 'carol', kind: 'node', label: 'person', properties: {} },
    ],
    'deleting bob took the edge with it',
  );
  const mutated = await events(s, 'graph.mutated');
  t.same(
    mutated.map((e) => [e.execution_id, e.node, e.attributes]),
    [
      [s.executionId, 'build', { mutations: 3, nodes_upserted: 2, edges_upserted: 1, elements_deleted: 0 }],
      [s.executionId, 'apply', { mutations: 2, nodes_upserted: 1, edges_upserted: 0, elements_deleted: 2 }],
    ],
  );
});

t.test('graph.mutate refusals take failure and write nothing', async (t) => {
  const s = await scene();
  const node = (i: number) => ({ op: 'upsert_node' as const, id: `n${i}`, label: 'x' });
  const forty = Array.from({ length: 40 }, (_, i) => node(i));
  t.same(
    await graphMutate.run(contextOf(s, 'm'), { from_input: true }, forty),
    passedOn(forty),
    'exactly the ceiling is accepted',
  );
  const fortyOne = Array.from({ length: 41 }, (_, i) => node(100 + i));
  t.same(await graphMutate.run(contextOf(s, 'm'), { mutations: fortyOne }, null), {
    kind: 'failure',
    error: {
      code: 'graph_mutation_too_large',
      message: '41 mutations in one call; limit workflow.graph_mutations_per_call is 40.',
      limit: { id: 'workflow.graph_mutations_per_call', value: 40 },
    },
  });

  const big = { op: 'upsert_node' as const, id: 'big', label: 'x', properties: { blob: 'a'.repeat(65_536) } };
  const tooBig = await graphMutate.run(contextOf(s, 'm'), { mutations: [node(200), big] }, null);
  t.equal(tooBig.kind, 'failure');
  t.same(tooBig.kind === 'failure' && tooBig.error.code, 'graph_element_too_large');
  t.same(tooBig.kind === 'failure' && tooBig.error.limit, { id: 'workflow.graph_element_bytes', value: 65_536 });

  // The fields beyond `op` are checked by the command's schema at run time.
  const malformed = await graphMutate.run(contextOf(s, 'm'), { from_input: true }, [
    { op: 'upsert_node', id: 'no-label' },
  ]);
  t.equal(malformed.kind, 'failure');
  t.equal(malformed.kind === 'failure' && malformed.error.code, 'invalid_request_body');
  t.notOk(malformed.kind === 'failure' && malformed.error.limit);
  const notArray = await graphMutate.run(contextOf(s, 'm'), { from_input: true }, { op: 'delete', id: 'n1' });
  t.equal(notArray.kind === 'failure' && notArray.error.code, 'invalid_request_body');

  // A conflict part-way rolls back the mutations before it.
  const conflict = await graphMutate.run(
    contextOf(s, 'm'),
    { mutations: [node(300), { op: 'upsert_edge' as const, id: 'e', label: 'x', source: 'n300', target: 'ghost' }] },
    null,
  );
  t.same(conflict, {
    kind: 'failure',
    error: { code: 'conflict', message: 'mutations[1]: edge "e": target node "ghost" does not exist.' },
  });

  t.equal((await elements(s)).length, 40, 'only the call within the ceilings wrote');
  t.equal((await events(s, 'graph.mutated')).length, 1);

  // What the whole session graph may hold (GRAPH_ELEMENTS_PER_SESSION): the runner's bound.
  const held = { ...contextOf(s, 'm'), graphBounds: { elements: 41, bytes: 0 } };
  t.same(await graphMutate.run(held, { mutations: [node(400)] }, null), passedOn(null), 'up to the bound');
  const past = await graphMutate.run(held, { mutations: [node(401)] }, null);
  t.equal(past.kind === 'failure' && past.error.code, 'conflict');
  t.match(past.kind === 'failure' && past.error.message, /GRAPH_ELEMENTS_PER_SESSION/);
  t.equal((await elements(s)).length, 41, 'the call past the bound wrote nothing');
});

t.test('an error that is not a refusal is thrown, not routed', async (t) => {
  const s = await scene();
  const broken: Db = {
    ...db,
    transaction: async () => {
      throw new Error('connection terminated');
    },
  };
  await t.rejects(objectPut.run(contextOf(s, 'put', {}, broken), { alias: 'x', value: 1 }, null), {
    message: 'connection terminated',
  });
  await t.rejects(threadPost.run(contextOf(s, 'post', {}, broken), { text: 'x' }, null), {
    message: 'connection terminated',
  });
  await t.rejects(
    graphMutate.run(contextOf(s, 'm', {}, broken), { mutations: [{ op: 'delete' as const, id: 'x' }] }, null),
    { message: 'connection terminated' },
  );
});

// ---- through the engine -----------------------------------------------------------------------

t.test('through the engine', async (t) => {
  // Set up before any runner exists, so that the execution is created (and resolves its limits)
  // while the quota in force is 1, and runs only after the override has been raised to 100.
  const quotaFlow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.session_objects_per_session', 'blob', quotaFlow.blobId, 1);
  await command(app, alice, quotaFlow.rev, 'upload_session_object', {
    session_id: quotaFlow.sessionId,
    alias: 'existing',
    value: 0,
  });
  const quotaGraph = {
    start: 'save',
    nodes: {
      save: {
        processor: 'object.put',
        config: { alias: 'fresh', from_input: true },
        routes: { success: null, failure: 'report' },
      },
      report: { processor: 'thread.post', config: { thread: 'alerts' } },
    },
  };
  const quotaRun = await runGraph(app, alice, quotaFlow, quotaGraph, { order: 9 });
  t.equal(quotaRun.limits['workflow.session_objects_per_session'], 1);
  await setOverride(app, 'workflow.session_objects_per_session', 'blob', quotaFlow.blobId, 100);

  await startEngine(t, databaseUrl);

  t.test('a workflow of all three runs to succeeded and its writes are visible', async (t) => {
    const flow = await createWorkflow(app, alice);
    const graph = {
      start: 'save',
      nodes: {
        save: {
          processor: 'object.put',
          config: { alias: 'last-order', from_input: true },
          routes: { success: 'notify' },
        },
        notify: { processor: 'thread.post', config: { thread: 'orders' }, routes: { success: 'link' } },
        link: {
          processor: 'graph.mutate',
          config: { mutations: [{ op: 'upsert_node', id: 'order-7', label: 'order', properties: { total: 12 } }] },
          routes: { success: null },
        },
      },
    };
    const input = { order: 7, total: 12 };
    const execution = await runGraph(app, alice, flow, graph, input);
    const ended = await waitForEnd(app, alice, flow, execution.id);
    t.equal(ended.status, 'succeeded');
    t.same(ended.output, input, 'each node passed its input on');

    const s: Scene = {
      blobId: flow.blobId,
      revisionId: flow.rev,
      sessionId: flow.sessionId,
      executionId: execution.id,
    };
    t.same(
      (await objects(s)).map((o) => [o.alias, o.value]),
      [['last-order', input]],
    );
    t.same(
      (await threadItems(s)).map((i) => [i.thread, i.text, i.data, i.execution_id]),
      [['orders', null, input, execution.id]],
    );
    t.same(await elements(s), [{ id: 'order-7', kind: 'node', label: 'order', properties: { total: 12 } }]);
    for (const [kind, node] of [
      ['object.written', 'save'],
      ['thread.item_posted', 'notify'],
      ['graph.mutated', 'link'],
    ]) {
      t.same(
        (await events(s, kind!)).map((e) => [e.execution_id, e.node]),
        [[execution.id, node]],
        `${kind} names the execution and node`,
      );
    }
    const run = await executionEvents(app, alice, flow, execution.id);
    t.same(
      run.filter((e) => e.kind === 'node.finished').map((e) => [e.node, e.attributes.route]),
      [
        ['save', 'success'],
        ['notify', 'success'],
        ['link', 'success'],
      ],
    );
  });

  t.test('object.put refused by the quota the execution stored takes the failure route', async (t) => {
    const ended = await waitForEnd(app, alice, quotaFlow, quotaRun.id);
    t.equal(ended.status, 'succeeded', 'the failure route handled it');
    const error = {
      code: 'limit_exceeded',
      message: 'Limit workflow.session_objects_per_session is 1 and 1 are held.',
      limit: { id: 'workflow.session_objects_per_session', value: 1, held: 1 },
    };
    t.same(ended.output, { error, input: { order: 9 } }, 'the report node passed on what it was given');
    const s: Scene = {
      blobId: quotaFlow.blobId,
      revisionId: quotaFlow.rev,
      sessionId: quotaFlow.sessionId,
      executionId: quotaRun.id,
    };
    t.same(
      (await objects(s)).map((o) => o.alias),
      ['existing'],
      'nothing was written, though 100 is in force now',
    );
    t.same(
      (await threadItems(s)).map((i) => [i.thread, i.data]),
      [['alerts', { error, input: { order: 9 } }]],
    );
    const run = await executionEvents(app, alice, quotaFlow, quotaRun.id);
    const failed = run.filter((e) => e.kind === 'node.failed');
    t.same(
      failed.map((e) => [e.node, e.attributes.error]),
      [['save', error]],
    );
    t.equal(run.filter((e) => e.kind === 'flow.error').length, 0, 'a refused write is no run-limit breach');
  });

  t.test('thread.post too_many_files takes the failure route', async (t) => {
    const flow = await createWorkflow(app, alice);
    const graph = {
      start: 'post',
      nodes: {
        post: {
          processor: 'thread.post',
          config: { text: 'x', files: Array.from({ length: 11 }, (_, i) => `file-${i}`) },
          routes: { failure: 'save' },
        },
        save: { processor: 'object.put', config: { alias: 'post-error', from_input: true } },
      },
    };
    const execution = await runGraph(app, alice, flow, graph, 'in');
    const ended = await waitForEnd(app, alice, flow, execution.id);
    t.equal(ended.status, 'succeeded');
    const s: Scene = {
      blobId: flow.blobId,
      revisionId: flow.rev,
      sessionId: flow.sessionId,
      executionId: execution.id,
    };
    t.same(
      (await objects(s)).map((o) => [o.alias, o.value]),
      [
        [
          'post-error',
          {
            error: {
              code: 'too_many_files',
              message: 'The item names 11 files; workflow.thread_item_files is 10.',
              limit: { id: 'workflow.thread_item_files', value: 10 },
            },
            input: 'in',
          },
        ],
      ],
    );
    t.same(await threadItems(s), []);
  });

  t.test('graph.mutate past its ceiling with no failure route fails the execution with the node error', async (t) => {
    const flow = await createWorkflow(app, alice);
    const mutations = Array.from({ length: 41 }, (_, i) => ({ op: 'upsert_node', id: `n${i}`, label: 'x' }));
    const graph = { start: 'mutate', nodes: { mutate: { processor: 'graph.mutate', config: { mutations } } } };
    const execution = await runGraph(app, alice, flow, graph);
    const ended = await waitForEnd(app, alice, flow, execution.id);
    t.equal(ended.status, 'failed');
    t.same(ended.error, {
      code: 'graph_mutation_too_large',
      message: '41 mutations in one call; limit workflow.graph_mutations_per_call is 40.',
      limit: { id: 'workflow.graph_mutations_per_call', value: 40 },
    });
    const s: Scene = {
      blobId: flow.blobId,
      revisionId: flow.rev,
      sessionId: flow.sessionId,
      executionId: execution.id,
    };
    t.same(await elements(s), []);
    const run = await executionEvents(app, alice, flow, execution.id);
    t.same(
      run.filter((e) => e.kind === 'node.failed').map((e) => e.attributes.error.code),
      ['graph_mutation_too_large'],
    );
    t.equal(run.filter((e) => e.kind === 'flow.error').length, 0);
  });
});
