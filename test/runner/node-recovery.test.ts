/**
 * Workflows that recover, through the API: a node's retry policy (every attempt a node run, the
 * waits between them durable like logic.sleep, across a runner restart), attempts exhausted
 * taking the failure route, a node's own timeout, check_definition on both fields, and
 * rerun_execution (from the failed node with its input, linked both ways, one per idempotency key).
 */
import t, { type Test } from 'tap';
import type { NodeResult } from '../../runner/processors/processor.ts';
import { processorRegistry } from '../../runner/processors/registry.ts';
import { buildTestApp, call, setOverride, signInAnonymous } from '../helpers/app.ts';
import { untilLockWaits } from '../helpers/lock-waits.ts';
import {
  command,
  createWorkflow,
  executionEvents,
  getExecution,
  runGraph,
  fileEngine,
  startEngine,
  waitForEnd,
  waitForStatus,
} from '../helpers/runner.ts';

// Runners start and stop in most tests, and the machines running the suite are shared: a generous bound.
t.setTimeout(600_000);

const { app, db, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);

const shared = fileEngine(t, databaseUrl);

function code(source: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source }, ...extra };
}

// Fails until its third run: the count of runs is a session object, so it survives restarts.
const FLAKY = `export default async (input, ctx) => {
  const runs = ((await ctx.objects.get('runs')) ?? 0) + 1;
  await ctx.objects.put('runs', runs);
  if (runs < 3) throw new Error('flaky dependency, run ' + runs);
  return { runs };
}`;

t.test('max_attempts 3: fails twice, succeeds on the third run; the waits survive a runner restart', async (t) => {
  const first = await startEngine(t, databaseUrl);
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, {
    start: 'call',
    nodes: {
      call: code(FLAKY, { retry: { max_attempts: 3, initial_interval_seconds: 2, backoff_factor: 1 } }),
    },
  });
  // Parked between attempts like logic.sleep: no runner holds it; this runner stops meanwhile.
  await waitForStatus(app, alice, flow, created.id, 'sleeping');
  await first.stop();
  await shared.get();

  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.status, 'succeeded');
  t.same(ended.output, { runs: 3 });
  t.equal(ended.node_runs, 3, 'every attempt is a node run');

  const events = await executionEvents(app, alice, flow, created.id);
  const of = (kind: string) => events.filter((event) => event.kind === kind);
  t.equal(of('node.started').length, 3);
  t.same(
    of('node.failed').map((event) => [event.node, event.attributes.attempt, event.attributes.error.code]),
    [
      ['call', 1, 'code_error'],
      ['call', 2, 'code_error'],
    ],
  );
  const retrying = of('node.retrying');
  t.same(
    retrying.map((event) => [
      event.node,
      event.attributes.attempt,
      event.attributes.max_attempts,
      event.attributes.wait_seconds,
    ]),
    [
      ['call', 2, 3, 2],
      ['call', 3, 3, 2],
    ],
  );
  for (const event of retrying) t.equal(new Date(event.attributes.wake_at).toISOString(), event.attributes.wake_at);
  t.equal(of('execution.resumed').length >= 2, true, 'each wait ended with a wake-up');
  t.equal(of('node.finished').length, 1);
});

t.test('attempts exhausted take the failure route, with the last error', async (t) => {
  await shared.get();
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(
    app,
    alice,
    flow,
    {
      start: 'call',
      nodes: {
        call: code('export default () => { throw new Error("down") }', {
          retry: { max_attempts: 2, initial_interval_seconds: 0 },
          routes: { failure: 'report' },
        }),
        report: code('export default (input) => ({ handled: input.error.code, input: input.input })'),
      },
    },
    { order: 7 },
  );
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.status, 'succeeded');
  t.same(ended.output, { handled: 'code_error', input: { order: 7 } });
  t.equal(ended.node_runs, 3, 'two attempts and the failure route');
  const events = await executionEvents(app, alice, flow, created.id);
  t.same(
    events.filter((event) => event.kind === 'node.retrying').map((event) => event.attributes.attempt),
    [2],
  );
  t.same(
    events.filter((event) => event.kind === 'node.failed').map((event) => event.attributes.attempt),
    [1, 2],
  );
});

t.test('a limit refusal is never retried', async (t) => {
  await shared.get();
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, {
    start: 'post',
    nodes: {
      // More files than workflow.thread_item_files: a refusal carrying the limit.
      post: {
        processor: 'thread.post',
        config: { text: 'x', files: Array.from({ length: 11 }, (_, at) => `file-${at}`) },
        retry: { max_attempts: 5, initial_interval_seconds: 0 },
      },
    },
  });
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.status, 'failed');
  t.equal(ended.error.code, 'too_many_files');
  t.equal(ended.node_runs, 1);
  const events = await executionEvents(app, alice, flow, created.id);
  t.equal(events.filter((event) => event.kind === 'node.retrying').length, 0);
});

t.test('a retry wait that would end past the deadline is not taken: the failure stands', async (t) => {
  await shared.get();
  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.execution_seconds', 'blob', flow.blobId, 300);
  const created = await runGraph(app, alice, flow, {
    start: 'post',
    nodes: {
      // A file alias the session does not have: invalid_request_body, the node's own error.
      post: {
        processor: 'thread.post',
        config: { text: 'x', files: ['missing'] },
        retry: { max_attempts: 3, initial_interval_seconds: 600 },
      },
    },
  });
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.status, 'failed');
  t.equal(ended.error.code, 'invalid_request_body');
  t.equal(ended.node_runs, 1);
  const events = await executionEvents(app, alice, flow, created.id);
  const failed = events.filter((event) => event.kind === 'node.failed');
  t.same(
    failed.map((event) => [event.attributes.attempt, event.attributes.retry_skipped]),
    [[1, 'deadline']],
  );
  t.equal(events.filter((event) => event.kind === 'node.retrying').length, 0);
});

t.test('timeout_seconds stops the run with node_timeout (its signal aborted); timeouts are retried', async (t) => {
  // A thread.post that only ends when its run is stopped, so the timeout is the only way out.
  const stopped: string[] = [];
  const processors = new Map(processorRegistry);
  processors.set('thread.post', {
    name: 'thread.post',
    run: (ctx) =>
      new Promise<NodeResult>((resolve) => {
        ctx.signal.addEventListener(
          'abort',
          () => {
            stopped.push(ctx.node);
            resolve({ kind: 'route', route: 'success', output: 'too late' });
          },
          { once: true },
        );
      }),
  });
  await shared.stop();
  await startEngine(t, databaseUrl, { processors });
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(
    app,
    alice,
    flow,
    {
      start: 'hang',
      nodes: {
        hang: {
          processor: 'thread.post',
          config: { text: 'x' },
          timeout_seconds: 1,
          retry: { max_attempts: 2, initial_interval_seconds: 0 },
          routes: { failure: 'save' },
        },
        save: { processor: 'object.put', config: { alias: 'failure', from_input: true } },
      },
    },
    { order: 1 },
  );
  const ended = await waitForEnd(app, alice, flow, created.id);
  t.equal(ended.status, 'succeeded');
  t.equal(ended.output.error.code, 'node_timeout');
  t.equal(ended.output.error.message, 'Node "hang" ran past its timeout_seconds (1 s) and was stopped.');
  t.same(ended.output.input, { order: 1 });
  t.equal(ended.node_runs, 3, 'two attempts and the failure route');
  t.same(stopped, ['hang', 'hang'], "each attempt's run was told to stop");
  const events = await executionEvents(app, alice, flow, created.id);
  t.same(
    events.filter((event) => event.kind === 'node.failed').map((event) => event.attributes.error.code),
    ['node_timeout', 'node_timeout'],
  );
  t.equal(events.filter((event) => event.kind === 'node.retrying').length, 1);
});

t.test('check_definition refuses bad retry and timeout fields, naming their paths', async (t) => {
  const flow = await createWorkflow(app, alice);
  const verdict = await command(app, alice, flow.rev, 'check_definition', {
    graph: {
      start: 'a',
      nodes: {
        a: code('export default () => 1', {
          retry: { max_attempts: 0, backoff_factor: 0.5, jitter: 'yes', max_interval_seconds: 50_000, extra: 1 },
          timeout_seconds: 871,
          routes: { success: 'b' },
        }),
        b: { processor: 'logic.sleep', config: { seconds: 1 }, timeout_seconds: 5, routes: { success: 'c' } },
        c: { processor: 'object.put', config: { alias: 'abc', value: 1 }, timeout_seconds: 0, retry: 3 },
      },
    },
  });
  t.equal(verdict.status, 'failure');
  const fields = verdict.errors.map((issue: any) => `${issue.code} ${issue.node} ${issue.field}`).sort();
  t.same(fields, [
    'invalid_node a retry.backoff_factor',
    'invalid_node a retry.extra',
    'invalid_node a retry.jitter',
    'invalid_node a retry.max_attempts',
    'invalid_node a retry.max_interval_seconds',
    'invalid_node a timeout_seconds',
    'invalid_node b timeout_seconds',
    'invalid_node c retry',
    'invalid_node c timeout_seconds',
  ]);
  const over = verdict.errors.find((issue: any) => issue.node === 'a' && issue.field === 'timeout_seconds');
  t.match(over.message, /workflow\.code_run_seconds in force is 870/);

  const good = await command(app, alice, flow.rev, 'check_definition', {
    graph: {
      start: 'a',
      nodes: {
        a: code('export default () => 1', {
          retry: {
            max_attempts: 5,
            initial_interval_seconds: 1,
            backoff_factor: 2,
            max_interval_seconds: 60,
            jitter: true,
            on_codes: ['code_error'],
          },
          timeout_seconds: 870,
        }),
      },
    },
  });
  t.same(good, { status: 'success', warnings: [] });
});

// Reads its setting from a session object: fails until the setting is fixed.
const READS_SETTING = `export default async (input, ctx) => {
  const setting = await ctx.objects.get('setting');
  if (!setting || !setting.ok) throw new Error('the setting is not ok');
  return { doubled: input.x, factor: setting.factor };
}`;

async function failedAtRead(t: Test) {
  const flow = await createWorkflow(app, alice);
  await command(app, alice, flow.rev, 'upload_session_object', {
    session_id: flow.sessionId,
    alias: 'setting',
    value: { ok: false },
  });
  const created = await runGraph(
    app,
    alice,
    flow,
    {
      start: 'prep',
      nodes: {
        prep: code('export default (input) => ({ x: input.n * 2 })', { routes: { success: 'read' } }),
        read: code(READS_SETTING),
      },
    },
    { n: 2 },
  );
  const failed = await waitForEnd(app, alice, flow, created.id);
  t.equal(failed.status, 'failed');
  t.equal(failed.error.code, 'code_error');
  await command(app, alice, flow.rev, 'upload_session_object', {
    session_id: flow.sessionId,
    alias: 'setting',
    value: { ok: true, factor: 3 },
  });
  return { flow, failed };
}

t.test('rerun_execution starts at the failed node with the input it had, linked both ways', async (t) => {
  await shared.get();
  const { flow, failed } = await failedAtRead(t);

  const rerun = (await command(app, alice, flow.rev, 'rerun_execution', { execution_id: failed.id })).execution;
  t.equal(rerun.session_id, failed.session_id, 'in the same session');
  t.equal(rerun.definition_id, failed.definition_id);
  t.equal(rerun.rerun_of, failed.id);
  t.equal(rerun.rerun_by, null);
  t.same(rerun.input_data, { x: 4 }, 'the input the failed node had');

  const ended = await waitForEnd(app, alice, flow, rerun.id);
  t.equal(ended.status, 'succeeded');
  t.same(ended.output, { doubled: 4, factor: 3 });
  t.equal(ended.node_runs, 1, 'only the failed node ran again');
  const original = await getExecution(app, alice, flow, failed.id);
  t.equal(original.rerun_by, rerun.id, 'the original names its re-run');
  t.equal(original.status, 'failed', 'the original is unchanged otherwise');

  const listed = (await command(app, alice, flow.rev, 'list_executions', { session_id: flow.sessionId })).executions;
  t.same(
    listed.map((execution: any) => [execution.id, execution.rerun_of, execution.rerun_by]),
    [
      [rerun.id, failed.id, null],
      [failed.id, null, rerun.id],
    ],
  );

  // From another node: the start node takes the original's input_data; input_data overrides.
  const fromStart = (
    await command(app, alice, flow.rev, 'rerun_execution', { execution_id: failed.id, from_node: 'prep' })
  ).execution;
  t.same(fromStart.input_data, { n: 2 });
  t.same((await waitForEnd(app, alice, flow, fromStart.id)).output, { doubled: 4, factor: 3 });
  const given = (
    await command(app, alice, flow.rev, 'rerun_execution', {
      execution_id: failed.id,
      from_node: 'read',
      input_data: { x: 10 },
    })
  ).execution;
  t.same((await waitForEnd(app, alice, flow, given.id)).output, { doubled: 10, factor: 3 });
  t.equal((await getExecution(app, alice, flow, failed.id)).rerun_by, given.id, 'rerun_by names the newest');
});

t.test('rerun_execution refusals', async (t) => {
  await shared.get();
  const { flow, failed } = await failedAtRead(t);
  const rerun = (path: string, params: Record<string, unknown>) =>
    call(app, 'POST', `/v1/revisions/${path}/rerun_execution`, { as: alice, body: params });

  const unknown = await rerun(flow.rev, { execution_id: '00000000-0000-4000-8000-000000000000' });
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error, 'not_found');
  const noNode = await rerun(flow.rev, { execution_id: failed.id, from_node: 'nope' });
  t.equal(noNode.status, 400);
  t.equal(noNode.body.error, 'invalid_request_body');

  // An execution still running cannot be re-run.
  const sleeping = await runGraph(app, alice, flow, {
    start: 'nap',
    nodes: { nap: { processor: 'logic.sleep', config: { seconds: 600 } } },
  });
  await waitForStatus(app, alice, flow, sleeping.id, 'sleeping');
  const unfinished = await rerun(flow.rev, { execution_id: sleeping.id });
  t.equal(unfinished.status, 409);
  t.equal(unfinished.body.error, 'conflict');
  await command(app, alice, flow.rev, 'cancel_execution', { execution_id: sleeping.id });

  // The limits of a create apply: the input ceiling on the input the re-run starts with.
  const big = await rerun(flow.rev, { execution_id: failed.id, input_data: { x: 'y'.repeat(70_000) } });
  t.equal(big.status, 400);
  t.same(big.body.limit, { id: 'workflow.execution_input_bytes', value: 65536 });
});

t.test('a double rerun_execution with one idempotency key runs once', async (t) => {
  await shared.get();
  const { flow, failed } = await failedAtRead(t);
  const send = () =>
    call(app, 'POST', `/v1/revisions/${flow.rev}/rerun_execution`, {
      as: alice,
      headers: { 'idempotency-key': 'rerun-once' },
      body: { execution_id: failed.id },
    });
  // Whether the two overlap is up to the scheduler: the second is either the first's answer
  // replayed or, while the first still runs, 409 "in progress" (docs/api.md, idempotency keys).
  const both = await Promise.all([send(), send()]);
  const answered = both.filter((res) => res.status === 200);
  t.ok(answered.length >= 1, 'at least one of the two is answered');
  for (const res of both.filter((res) => res.status !== 200)) {
    t.equal(res.status, 409);
    t.equal(res.body.error, 'conflict');
    t.match(res.body.message, /in progress/);
  }
  const id = answered[0]!.body.execution.id;
  for (const res of answered) t.equal(res.body.execution.id, id);
  const again = await send();
  t.equal(again.status, 200);
  t.equal(again.body.execution.id, id);
  t.equal(again.res.headers['idempotent-replayed'], 'true');
  await waitForEnd(app, alice, flow, id);
  const listed = (await command(app, alice, flow.rev, 'list_executions', { session_id: flow.sessionId })).executions;
  t.equal(listed.length, 2, 'the original and one re-run');
});

t.test('a re-run of an original being removed waits for the removal, then is refused', async (t) => {
  await shared.get();
  const { flow, failed } = await failedAtRead(t);
  // The original's removal (a retention batch, a session's removal) in flight on another connection.
  const remover = await db.pool.connect();
  t.teardown(() => remover.release());
  await remover.query('BEGIN');
  await remover.query('DELETE FROM executions WHERE id = $1::uuid', [failed.id]);
  const rerun = call(app, 'POST', `/v1/revisions/${flow.rev}/rerun_execution`, {
    as: alice,
    body: { execution_id: failed.id },
  });
  await untilLockWaits(db, 1);
  await remover.query('COMMIT');
  const res = await rerun;
  t.equal(res.status, 404);
  t.equal(res.body.error, 'not_found');
  const { rows } = await db.query('SELECT id FROM executions WHERE rerun_of = $1::uuid', [failed.id]);
  t.same(rows, [], 'no execution names the removed original');
});
