import type { PgBoss } from 'pg-boss';
import t from 'tap';
import { heldCount } from '../shared/limits/holdings.ts';
import type { JobQueue } from '../shared/queue/execution-jobs.ts';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from './helpers/app.ts';
import { grant } from './helpers/access.ts';
import { executionJobs } from './helpers/queue.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import { openSocket, sameRefusal, transports } from './helpers/session-commands.ts';
import { holdSessionRow } from './helpers/session-fixtures.ts';

// The app sends through the test's pg-boss; `failSends` makes a send fail after pg-boss wrote the
// job inside the transaction, to show that the job and the execution roll back together.
let failSends = false;
const queue: JobQueue = {
  async send(name, data, options) {
    const id = await boss!.send(name, data ?? null, options ?? {});
    if (failSends) throw new Error('the queue failed after writing the job');
    return id;
  },
};
const testApp = await buildTestApp(t, {}, { queue });
const boss: PgBoss | undefined = testApp.boss;
const { app, db, databaseUrl } = testApp;
const io = transports(t, app);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const GRAPH = { start: 'nap', nodes: { nap: { processor: 'logic.sleep', config: { seconds: 1 } } } };
const INPUT_BYTES = 65_536;

interface Flow {
  orgId: string;
  blobId: string;
  rev: string;
  sessionId: string;
  definitionId: string;
}

/** A fresh organization of Alice's with one workflow blob, a session and a definition (alias `flow`). */
async function freshFlow(): Promise<Flow> {
  const org = await createOrg(app, alice);
  const { blob, revision } = await createBlob(app, alice, org.id);
  const session = await ok(alice, revision.id, 'create_session', {});
  const definition = await ok(alice, revision.id, 'create_definition', {
    alias: 'flow',
    category: 'workflow',
    graph: GRAPH,
  });
  return {
    orgId: org.id,
    blobId: blob.id,
    rev: revision.id,
    sessionId: session.session.id,
    definitionId: definition.definition.id,
  };
}

/** A command over REST that must succeed; returns the body. */
async function ok(as: Caller, rev: string, command: string, params: Record<string, unknown>): Promise<any> {
  const res = await io.rest(as, rev, command, params);
  if (res.status !== 200) throw new Error(`${command}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function createExecution(flow: Flow, params: Record<string, unknown> = {}): Promise<Record<string, any>> {
  return (
    await ok(alice, flow.rev, 'create_execution', {
      session_id: flow.sessionId,
      definition_id: flow.definitionId,
      ...params,
    })
  ).execution;
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) x`, params);
  return rows[0]!.n;
}

async function heldOnOrg(orgId: string, limitId: string): Promise<number> {
  const { status, body } = await call(app, 'GET', `/v1/orgs/${orgId}/limits`, { as: alice });
  if (status !== 200) throw new Error(`org limits: ${status}`);
  const entry = body.groups.flatMap((g: any) => g.limits).find((l: any) => l.id === limitId);
  return entry.held;
}

const flow = await freshFlow();

t.test(
  'create_execution on both transports: the queued record, its stored limits, its job and its session event',
  async (t) => {
    const rest = await io.rest(alice, flow.rev, 'create_execution', {
      session_id: flow.sessionId,
      definition_id: flow.definitionId,
      input_data: { name: 'Ada' },
    });
    t.equal(rest.status, 200);
    t.same(Object.keys(rest.body), ['status', 'execution']);
    const execution = rest.body.execution;
    t.same(Object.keys(execution), [
      'id',
      'session_id',
      'definition_id',
      'status',
      'input_data',
      'output',
      'error',
      'created_at',
      'started_at',
      'ended_at',
      'node_runs',
      'limits',
      'rerun_of',
      'rerun_by',
    ]);
    t.match(execution, {
      id: UUID,
      session_id: flow.sessionId,
      definition_id: flow.definitionId,
      status: 'queued',
      created_at: ISO,
    });
    t.same(execution.input_data, { name: 'Ada' });
    t.same(
      [execution.output, execution.error, execution.started_at, execution.ended_at, execution.node_runs],
      [null, null, null, null, 0],
    );
    t.same(
      execution.limits,
      {
        'workflow.processor_runs_per_execution': 1000,
        'workflow.execution_seconds': 86400,
        'workflow.code_run_seconds': 870,
        'workflow.code_imports': [],
        'workflow.session_objects_per_session': 1000,
      },
      "the five run limits in force for the session's blob",
    );

    const jobs = await executionJobs(db, execution.id);
    t.equal(jobs.length, 1, 'one wake-up job for the runner');
    t.same(jobs[0]!.data, { execution_id: execution.id });
    t.equal(jobs[0]!.state, 'created');

    const { rows: stored } = await db.query(
      'SELECT org_id, blob_id, revision_id, graph, state FROM executions WHERE id = $1::uuid',
      [execution.id],
    );
    t.same(
      stored[0],
      {
        org_id: flow.orgId,
        blob_id: flow.blobId,
        revision_id: flow.rev,
        graph: GRAPH,
        state: { node: 'nap', input: { name: 'Ada' } },
      },
      'the graph is copied and the state starts at the start node',
    );

    const { rows: events } = await db.query(
      'SELECT kind, execution_id, attributes FROM session_events WHERE session_id = $1::uuid AND execution_id = $2::uuid',
      [flow.sessionId, execution.id],
    );
    t.same(events, [
      {
        kind: 'execution.created',
        execution_id: execution.id,
        attributes: { execution_id: execution.id, definition_id: flow.definitionId },
      },
    ]);

    // JSON-RPC, naming the definition by alias and leaving input_data out.
    const rpc = await io.rpc(alice, flow.rev, 'create_execution', {
      session_id: flow.sessionId,
      definition_id: 'flow',
    });
    t.same(Object.keys(rpc.result), ['execution']);
    t.match(rpc.result.execution, { id: UUID, definition_id: flow.definitionId, status: 'queued', input_data: null });
    t.equal((await executionJobs(db, rpc.result.execution.id)).length, 1);
  },
);

t.test("the run limits are resolved once, from the session's blob, and kept", async (t) => {
  const mine = await freshFlow();
  await setOverride(app, 'workflow.processor_runs_per_execution', 'blob', mine.blobId, 7);
  await setOverride(app, 'workflow.code_imports', 'org', mine.orgId, ['lodash']);
  const before = await createExecution(mine);
  t.equal(before.limits['workflow.processor_runs_per_execution'], 7);
  t.same(before.limits['workflow.code_imports'], ['lodash']);
  await setOverride(app, 'workflow.processor_runs_per_execution', 'blob', mine.blobId, 8);
  const after = await createExecution(mine);
  t.equal(after.limits['workflow.processor_runs_per_execution'], 8, 'a later change applies to later executions');
  const again = await ok(alice, mine.rev, 'get_execution', { execution_id: before.id });
  t.equal(again.execution.limits['workflow.processor_runs_per_execution'], 7, 'an existing execution keeps its value');
});

t.test(
  'workflow.execution_input_bytes: measured serialized, the ceiling itself accepted, one byte past refused',
  async (t) => {
    const mine = await freshFlow();
    // A JSON string serializes with its two quotes: 65,534 characters are 65,536 bytes.
    const atCeiling = await createExecution(mine, { input_data: 'x'.repeat(INPUT_BYTES - 2) });
    t.equal(atCeiling.status, 'queued');
    // Measured in UTF-8: 'é' is two bytes, so 32,767 of them with the quotes are 65,536 bytes, and one 'x' more is past it.
    await createExecution(mine, { input_data: 'é'.repeat((INPUT_BYTES - 2) / 2) });
    const limit = { id: 'workflow.execution_input_bytes', value: INPUT_BYTES };
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', {
        session_id: mine.sessionId,
        definition_id: mine.definitionId,
        input_data: 'x'.repeat(INPUT_BYTES - 1),
      }),
      400,
      'limit_exceeded',
      { limit },
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', {
        session_id: mine.sessionId,
        definition_id: mine.definitionId,
        input_data: `x${'é'.repeat((INPUT_BYTES - 2) / 2)}`,
      }),
      400,
      'limit_exceeded',
      { limit },
    );
    t.equal(
      await count('SELECT 1 FROM executions WHERE session_id = $1::uuid', [mine.sessionId]),
      2,
      'a refusal takes no slot and writes no row',
    );
    t.equal(
      await count(
        `SELECT 1 FROM pgboss.job j JOIN executions e ON e.id::text = j.data->>'execution_id' WHERE j.name = 'executions' AND e.session_id = $1::uuid`,
        [mine.sessionId],
      ),
      2,
      'nor a job',
    );
  },
);

t.test('workflow.executions_per_session: exact limit object; held on get_session', async (t) => {
  const mine = await freshFlow();
  await setOverride(app, 'workflow.executions_per_session', 'blob', mine.blobId, 2);
  const first = await createExecution(mine);
  await createExecution(mine);
  const limit = { id: 'workflow.executions_per_session', value: 2, held: 2 };
  sameRefusal(
    t,
    await io.both(alice, mine.rev, 'create_execution', {
      session_id: mine.sessionId,
      definition_id: mine.definitionId,
    }),
    400,
    'limit_exceeded',
    { limit },
  );
  const session = await ok(alice, mine.rev, 'get_session', { session_id: mine.sessionId });
  t.equal(session.session.held['workflow.executions_per_session'], 2);

  // Ending an execution does not free this slot (only retention removing it does).
  await ok(alice, mine.rev, 'cancel_execution', { execution_id: first.id });
  sameRefusal(
    t,
    await io.both(alice, mine.rev, 'create_execution', {
      session_id: mine.sessionId,
      definition_id: mine.definitionId,
    }),
    400,
    'limit_exceeded',
    { limit },
  );
  // Another session of the same blob holds its own count.
  const other = await ok(alice, mine.rev, 'create_session', {});
  t.equal((await createExecution({ ...mine, sessionId: other.session.id })).status, 'queued');
});

t.test(
  "workflow.running_executions_per_org: counted across the organization's sessions, freed by cancel",
  async (t) => {
    const mine = await freshFlow();
    await setOverride(app, 'workflow.running_executions_per_org', 'org', mine.orgId, 2);
    // A second blob of the same organization shares the count.
    const { revision } = await createBlob(app, alice, mine.orgId);
    const otherSession = await ok(alice, revision.id, 'create_session', {});
    const otherDefinition = await ok(alice, revision.id, 'create_definition', { category: 'workflow', graph: GRAPH });
    const other: Flow = {
      ...mine,
      rev: revision.id,
      sessionId: otherSession.session.id,
      definitionId: otherDefinition.definition.id,
    };

    const first = await createExecution(mine);
    await createExecution(other);
    t.equal(await heldOnOrg(mine.orgId, 'workflow.running_executions_per_org'), 2, 'held on Get Organization Limits');
    const limit = { id: 'workflow.running_executions_per_org', value: 2, held: 2 };
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', {
        session_id: mine.sessionId,
        definition_id: mine.definitionId,
      }),
      400,
      'limit_exceeded',
      { limit },
    );
    sameRefusal(
      t,
      await io.both(alice, other.rev, 'create_execution', {
        session_id: other.sessionId,
        definition_id: other.definitionId,
      }),
      400,
      'limit_exceeded',
      { limit },
    );

    const cancelled = await io.rpc(alice, mine.rev, 'cancel_execution', { execution_id: first.id });
    t.equal(cancelled.result.execution.status, 'cancelled');
    t.equal(await heldOnOrg(mine.orgId, 'workflow.running_executions_per_org'), 1, 'the end freed the slot');
    t.equal((await createExecution(mine)).status, 'queued', 'and a new execution takes it');
    t.equal(await heldOnOrg(mine.orgId, 'workflow.running_executions_per_org'), 2);
  },
);

t.test('refusals come in the specified order: input ceiling, then the organization, then the session', async (t) => {
  const mine = await freshFlow();
  await setOverride(app, 'workflow.running_executions_per_org', 'org', mine.orgId, 1);
  await setOverride(app, 'workflow.executions_per_session', 'blob', mine.blobId, 1);
  await createExecution(mine);
  const base = { session_id: mine.sessionId, definition_id: mine.definitionId };
  // Both holders are full: the input ceiling still answers first, then the organization.
  sameRefusal(
    t,
    await io.both(alice, mine.rev, 'create_execution', { ...base, input_data: 'x'.repeat(INPUT_BYTES) }),
    400,
    'limit_exceeded',
    { limit: { id: 'workflow.execution_input_bytes', value: INPUT_BYTES } },
  );
  const org = await io.both(alice, mine.rev, 'create_execution', base);
  sameRefusal(t, org, 400, 'limit_exceeded', {
    limit: { id: 'workflow.running_executions_per_org', value: 1, held: 1 },
  });
  t.equal(org.rest.body.message, 'Limit workflow.running_executions_per_org is 1 and 1 are held.');
  await setOverride(app, 'workflow.running_executions_per_org', 'org', mine.orgId, 5);
  sameRefusal(t, await io.both(alice, mine.rev, 'create_execution', base), 400, 'limit_exceeded', {
    limit: { id: 'workflow.executions_per_session', value: 1, held: 1 },
  });
  // A missing definition answers before any limit.
  sameRefusal(
    t,
    await io.both(alice, mine.rev, 'create_execution', {
      ...base,
      definition_id: 'no-such-flow',
      input_data: 'x'.repeat(INPUT_BYTES),
    }),
    404,
    'not_found',
  );
  // `held` is what takeSlot's own count says (shared/limits/holdings.ts), for both quotas.
  t.equal(await heldCount(db, 'workflow.executions_per_session', mine.sessionId), 1);
  t.equal(await heldCount(db, 'workflow.running_executions_per_org', mine.orgId), 1);
});

t.test('parallel creates against running_executions_per_org = 3 take exactly 3 slots', async (t) => {
  const mine = await freshFlow();
  const second = await ok(alice, mine.rev, 'create_session', {});
  await setOverride(app, 'workflow.running_executions_per_org', 'org', mine.orgId, 3);
  const sessions = [mine.sessionId, second.session.id];
  const outcomes = await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      io.rest(alice, mine.rev, 'create_execution', { session_id: sessions[i % 2], definition_id: mine.definitionId }),
    ),
  );
  const created = outcomes.filter((o) => o.status === 200);
  t.equal(created.length, 3, 'exactly the free slots');
  for (const o of outcomes.filter((o) => o.status !== 200)) {
    t.equal(o.status, 400);
    t.same(
      o.body.limit,
      { id: 'workflow.running_executions_per_org', value: 3, held: 3 },
      'each refusal saw the organization full',
    );
  }
  const inOrg = `SELECT 1 FROM executions e WHERE e.org_id = $1::uuid`;
  t.equal(await count(inOrg, [mine.orgId]), 3);
  t.equal(
    await count(
      `SELECT 1 FROM pgboss.job j JOIN executions e ON e.id::text = j.data->>'execution_id' WHERE j.name = 'executions' AND e.org_id = $1::uuid`,
      [mine.orgId],
    ),
    3,
    'one job each',
  );
  t.equal(
    await count(`SELECT 1 FROM session_events WHERE session_id = ANY($1::uuid[]) AND kind = 'execution.created'`, [
      sessions,
    ]),
    3,
    'one event each',
  );
  t.equal(await heldOnOrg(mine.orgId, 'workflow.running_executions_per_org'), 3);
});

t.test('parallel creates against executions_per_session = 4 take exactly 4 slots', async (t) => {
  const mine = await freshFlow();
  await setOverride(app, 'workflow.running_executions_per_org', 'org', mine.orgId, 100);
  await setOverride(app, 'workflow.executions_per_session', 'blob', mine.blobId, 4);
  await createExecution(mine);
  const outcomes = await Promise.all(
    Array.from({ length: 12 }, () =>
      io.rest(alice, mine.rev, 'create_execution', { session_id: mine.sessionId, definition_id: mine.definitionId }),
    ),
  );
  t.equal(outcomes.filter((o) => o.status === 200).length, 3, 'the three free slots');
  for (const o of outcomes.filter((o) => o.status !== 200))
    t.same(o.body.limit, { id: 'workflow.executions_per_session', value: 4, held: 4 });
  t.equal(await count('SELECT 1 FROM executions WHERE session_id = $1::uuid', [mine.sessionId]), 4);
});

t.test('a subscriber to the session hears execution.created (the NOTIFY of the create)', async (t) => {
  const mine = await freshFlow();
  const socket = await openSocket(t, app, alice);
  const subscribed = await socket.call('subscribe', { revision_id: mine.rev, session_id: mine.sessionId });
  const execution = await createExecution(mine, { definition_id: 'flow' });
  const pushed = await socket.notification();
  t.equal(pushed.params.subscription, subscribed.result.subscription);
  t.match(pushed.params.event, {
    kind: 'execution.created',
    session_id: mine.sessionId,
    execution_id: execution.id,
    node: null,
    at: ISO,
  });
  t.same(pushed.params.event.attributes, { execution_id: execution.id, definition_id: mine.definitionId });
  const { rows } = await db.query('SELECT id FROM session_events WHERE execution_id = $1::uuid', [execution.id]);
  t.equal(pushed.params.event.id, String(rows[0].id));
});

t.test(
  'create_execution refusals: missing session or definition 404, deleting session 409, bad params 400',
  async (t) => {
    const mine = await freshFlow();
    const stranger = await freshFlow();
    const base = { session_id: mine.sessionId, definition_id: mine.definitionId };
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', { ...base, session_id: 'no-such-session' }),
      404,
      'not_found',
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', { ...base, session_id: stranger.sessionId }),
      404,
      'not_found',
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', { ...base, definition_id: 'no-such-flow' }),
      404,
      'not_found',
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', { ...base, definition_id: stranger.definitionId }),
      404,
      'not_found',
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', { session_id: mine.sessionId }),
      400,
      'invalid_request_body',
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', { ...base, priority: 1 }),
      400,
      'invalid_request_body',
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'create_execution', { ...base, session_id: null }),
      400,
      'invalid_request_body',
    );

    // Keep the row from being removed so the session is seen while `deleting`.
    await holdSessionRow(t, databaseUrl, mine.sessionId);
    await ok(alice, mine.rev, 'delete_session', { session_id: mine.sessionId });
    sameRefusal(t, await io.both(alice, mine.rev, 'create_execution', base), 409, 'conflict');
    t.equal(await count('SELECT 1 FROM executions WHERE session_id = $1::uuid', [mine.sessionId]), 0);
  },
);

t.test('the execution and its job are one transaction: a failing send leaves neither', async (t) => {
  const mine = await freshFlow();
  const allJobs = `SELECT 1 FROM pgboss.job WHERE name = 'executions'`;
  const jobsBefore = await count(allJobs, []);
  failSends = true;
  t.teardown(() => {
    failSends = false;
  });
  const res = await io.rest(alice, mine.rev, 'create_execution', {
    session_id: mine.sessionId,
    definition_id: mine.definitionId,
  });
  t.equal(res.status, 500);
  t.equal(res.body.error, 'internal_error');
  t.notMatch(res.body.message, /queue failed/, 'the cause is not shown to the client');
  t.equal(await count('SELECT 1 FROM executions WHERE session_id = $1::uuid', [mine.sessionId]), 0, 'no execution row');
  t.equal(
    await count(`SELECT 1 FROM session_events WHERE session_id = $1::uuid AND kind = 'execution.created'`, [
      mine.sessionId,
    ]),
    0,
    'no session event',
  );
  t.equal(await count(allJobs, []), jobsBefore, 'no job: the one the send wrote rolled back too');
  t.equal(await heldOnOrg(mine.orgId, 'workflow.running_executions_per_org'), 0, 'no running slot');
  failSends = false;
  t.equal((await createExecution(mine)).status, 'queued', 'the same call succeeds once the queue does');
});

t.test(
  "get_execution: the record on both transports; another revision's execution, a non-id and an unknown id are 404",
  async (t) => {
    const execution = await createExecution(flow, { input_data: [1, 2, 3] });
    const { rest, rpc } = await io.both(alice, flow.rev, 'get_execution', { execution_id: execution.id });
    t.equal(rest.status, 200);
    t.same(rest.body.execution, execution);
    t.same(rpc.result, { execution });

    const elsewhere = await freshFlow();
    sameRefusal(
      t,
      await io.both(alice, elsewhere.rev, 'get_execution', { execution_id: execution.id }),
      404,
      'not_found',
    );
    sameRefusal(t, await io.both(alice, flow.rev, 'get_execution', { execution_id: 'not-an-id' }), 404, 'not_found');
    sameRefusal(
      t,
      await io.both(alice, flow.rev, 'get_execution', { execution_id: '0b9a5b8e-0000-4000-8000-000000000000' }),
      404,
      'not_found',
    );
    sameRefusal(t, await io.both(alice, flow.rev, 'get_execution', {}), 400, 'invalid_request_body');
  },
);

t.test(
  'cancel_execution: ends it cancelled with execution.finished on both logs; again answers it unchanged',
  async (t) => {
    const execution = await createExecution(flow);
    const { rest, rpc } = await io.both(alice, flow.rev, 'cancel_execution', { execution_id: execution.id });
    t.equal(rest.status, 200);
    const cancelled = rest.body.execution;
    t.match(cancelled, {
      id: execution.id,
      status: 'cancelled',
      output: null,
      error: null,
      ended_at: ISO,
      started_at: null,
    });
    t.same(rpc.result, { execution: cancelled }, 'cancelling again (JSON-RPC) answers the same record: idempotent');

    const { rows: executionEvents } = await db.query(
      'SELECT kind, attributes FROM execution_events WHERE execution_id = $1::uuid',
      [execution.id],
    );
    t.equal(executionEvents.length, 1, 'one execution.finished, not two');
    t.equal(executionEvents[0].kind, 'execution.finished');
    t.equal(executionEvents[0].attributes.status, 'cancelled');
    t.type(executionEvents[0].attributes.duration_ms, 'number');
    const { rows: sessionEvents } = await db.query(
      `SELECT attributes FROM session_events WHERE execution_id = $1::uuid AND kind = 'execution.finished'`,
      [execution.id],
    );
    t.same(
      sessionEvents.map((e) => e.attributes),
      [{ execution_id: execution.id, status: 'cancelled' }],
    );

    // A running execution: the lease goes with the end, so the runner's next guarded write finds nothing.
    const running = await createExecution(flow);
    const runner = '6f0a4c1e-0000-4000-8000-000000000001';
    await db.query(
      `UPDATE executions SET status = 'running', started_at = now(), lease_owner = $2::uuid, lease_until = now() + interval '10 seconds' WHERE id = $1::uuid`,
      [running.id, runner],
    );
    const stopped = await ok(alice, flow.rev, 'cancel_execution', { execution_id: running.id });
    t.match(stopped.execution, { status: 'cancelled', started_at: ISO, ended_at: ISO });
    const { rows } = await db.query('SELECT lease_owner, lease_until FROM executions WHERE id = $1::uuid', [
      running.id,
    ]);
    t.same(rows[0], { lease_owner: null, lease_until: null });

    // One that ended otherwise keeps its own ending.
    const finished = await createExecution(flow);
    await db.query(
      `UPDATE executions SET status = 'succeeded', output = '{"ok":true}', ended_at = now() WHERE id = $1::uuid`,
      [finished.id],
    );
    const unchanged = await ok(alice, flow.rev, 'cancel_execution', { execution_id: finished.id });
    t.match(unchanged.execution, { status: 'succeeded', output: { ok: true } });

    sameRefusal(t, await io.both(alice, flow.rev, 'cancel_execution', { execution_id: 'not-an-id' }), 404, 'not_found');
  },
);

t.test('list_executions: record cursor, ten newest first, to exhaustion with inserts between pages', async (t) => {
  const mine = await freshFlow();
  await setOverride(app, 'workflow.running_executions_per_org', 'org', mine.orgId, 100);
  const created: string[] = [];
  for (let i = 0; i < 23; i += 1) created.push((await createExecution(mine, { input_data: i })).id);
  const newestFirst = [...created].reverse();

  const first = await io.both(alice, mine.rev, 'list_executions', { session_id: mine.sessionId });
  t.same(Object.keys(first.rest.body), ['status', 'executions', 'last_session_id']);
  t.same(
    first.rest.body.executions.map((e: any) => e.id),
    newestFirst.slice(0, 10),
  );
  t.equal(first.rest.body.last_session_id, newestFirst[9]);
  t.same(first.rpc.result, { executions: first.rest.body.executions, last_session_id: newestFirst[9] });

  // Executions created between pages are newer than the cursor: they neither repeat nor shift rows.
  await createExecution(mine);
  await createExecution(mine);
  const second = await ok(alice, mine.rev, 'list_executions', {
    session_id: mine.sessionId,
    start_session_id: newestFirst[9],
  });
  t.same(
    second.executions.map((e: any) => e.id),
    newestFirst.slice(10, 20),
  );
  const third = await io.rpc(alice, mine.rev, 'list_executions', {
    session_id: mine.sessionId,
    start_session_id: second.last_session_id,
  });
  t.same(
    third.result.executions.map((e: any) => e.id),
    newestFirst.slice(20),
  );
  t.equal(third.result.last_session_id, null, 'exhausted on the last page, with no trailing empty page');

  const empty = await ok(alice, mine.rev, 'create_session', {});
  t.same(await ok(alice, mine.rev, 'list_executions', { session_id: empty.session.id }), {
    status: 'success',
    executions: [],
    last_session_id: null,
  });
});

t.test(
  'list_executions refusals: limit, null or foreign cursor, deleted record 500, unknown session 404',
  async (t) => {
    const mine = await freshFlow();
    await setOverride(app, 'workflow.running_executions_per_org', 'org', mine.orgId, 100);
    for (let i = 0; i < 12; i += 1) await createExecution(mine);
    const page = await ok(alice, mine.rev, 'list_executions', { session_id: mine.sessionId });
    const base = { session_id: mine.sessionId };
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'list_executions', { ...base, limit: 5 }),
      400,
      'invalid_request_body',
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'list_executions', { ...base, start_session_id: null }),
      400,
      'invalid_request_body',
    );
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'list_executions', { ...base, session_id: 'no-such-session' }),
      404,
      'not_found',
    );
    // An execution of another session is not a position in this listing.
    const other = await createExecution(flow);
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'list_executions', { ...base, start_session_id: other.id }),
      500,
      'cursor_record_deleted',
    );
    // Retention removing the record the cursor names.
    await db.query('DELETE FROM executions WHERE id = $1::uuid', [page.last_session_id]);
    sameRefusal(
      t,
      await io.both(alice, mine.rev, 'list_executions', { ...base, start_session_id: page.last_session_id }),
      500,
      'cursor_record_deleted',
    );
  },
);

t.test('access: a stranger gets 404 everywhere; a reader reads but may not create or cancel (403)', async (t) => {
  const mine = await freshFlow();
  const execution = await createExecution(mine);
  const calls: [string, Record<string, unknown>][] = [
    ['create_execution', { session_id: mine.sessionId, definition_id: mine.definitionId }],
    ['get_execution', { execution_id: execution.id }],
    ['cancel_execution', { execution_id: execution.id }],
    ['list_executions', { session_id: mine.sessionId }],
  ];
  for (const [command, params] of calls)
    sameRefusal(t, await io.both(bob, mine.rev, command, params), 404, 'not_found');

  await grant(app, alice, 'blob', mine.blobId, bob.user.id, 'read');
  sameRefusal(t, await io.both(bob, mine.rev, 'create_execution', calls[0]![1]), 403, 'forbidden');
  sameRefusal(t, await io.both(bob, mine.rev, 'cancel_execution', calls[2]![1]), 403, 'forbidden');
  const read = await io.both(bob, mine.rev, 'get_execution', calls[1]![1]);
  t.equal(read.rest.body.execution.status, 'queued', 'the refused cancel changed nothing');
  t.same(read.rpc.result, { execution: read.rest.body.execution });
  const listed = await io.both(bob, mine.rev, 'list_executions', calls[3]![1]);
  t.same(
    listed.rest.body.executions.map((e: any) => e.id),
    [execution.id],
  );
  t.same(listed.rpc.result.executions, listed.rest.body.executions);

  await grant(app, alice, 'blob', mine.blobId, bob.user.id, 'write');
  t.equal(
    (await io.rpc(bob, mine.rev, 'cancel_execution', { execution_id: execution.id })).result.execution.status,
    'cancelled',
    'a writer may cancel',
  );
});

t.test('execution and session ids are time-ordered UUIDv7s: each later one sorts after the earlier', async (t) => {
  const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
  const ids: string[] = [];
  const sessions: string[] = [];
  for (let i = 0; i < 4; i++) {
    sessions.push((await ok(alice, flow.rev, 'create_session', {})).session.id);
    ids.push((await createExecution(flow)).id);
    // A new millisecond, so the clock part, not the random part, orders them.
    const start = Date.now();
    while (Date.now() === start);
  }
  for (const id of [...ids, ...sessions]) t.match(id, V7, `${id} is a version-7 UUID`);
  t.same([...ids].sort(), ids, 'executions sort in creation order');
  t.same([...sessions].sort(), sessions, 'sessions sort in creation order');
  const millis = Number.parseInt(ids[0]!.replaceAll('-', '').slice(0, 12), 16);
  t.ok(Math.abs(millis - Date.now()) < 60_000, 'the first 48 bits are the creation time in Unix milliseconds');
});
