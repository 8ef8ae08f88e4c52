/**
 * The batched per-node writes (runner/engine/step-writes.ts): one statement serves many
 * executions, and each row keeps its own guard. An execution another runner holds, or one a cancel
 * ended, is left untouched and reported as not ours, whatever else its batch writes.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { buildTestApp, signInAnonymous } from '../helpers/app.ts';
import { command, createWorkflow, define, executionEvents, startExecution } from '../helpers/runner.ts';
import { claimExecutions } from '../../runner/engine/claim.ts';
import { advanceNodes, endExecutions, startNodes, writeSteps } from '../../runner/engine/step-writes.ts';

const { app, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const flow = await createWorkflow(app, alice);
const graph = {
  start: 'a',
  nodes: {
    a: { processor: 'logic.code', config: { code: 'export default (i) => i' }, routes: { success: 'b' } },
    b: { processor: 'logic.code', config: { code: 'export default (i) => i' } },
  },
};
const definitionId = await define(app, alice, flow, graph);
const me = { runnerId: randomUUID(), leaseSeconds: 30 };
const other = { runnerId: randomUUID(), leaseSeconds: 30 };

async function created(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await startExecution(app, alice, flow, definitionId, { i })).id);
  return ids;
}

function kinds(events: any[]): string[] {
  return events.map((event) => `${event.kind}${event.node ? `:${event.node}` : ''}`);
}

t.test('a batch writes its own executions and leaves the rest untouched', async (t) => {
  const [mine1, mine2, theirs, cancelled] = (await created(4)) as [string, string, string, string];
  t.equal((await claimExecutions(db, me.runnerId, [mine1, mine2, cancelled], 30)).length, 3);
  t.equal((await claimExecutions(db, other.runnerId, [theirs], 30)).length, 1);
  await command(app, alice, flow.rev, 'cancel_execution', { execution_id: cancelled });

  const runs = await startNodes(
    db,
    me,
    [mine1, mine2, theirs, cancelled].map((executionId) => ({ executionId, node: 'a', processor: 'logic.code' })),
  );
  t.same(runs, [1, 1, null, null], 'only the two held by this runner start');

  const advanced = await advanceNodes(db, me, [
    {
      executionId: mine1,
      state: { node: 'b', input: { x: 1 } },
      events: [{ kind: 'node.finished', node: 'a', attributes: { route: 'success' } }],
      startProcessor: 'logic.code',
    },
    {
      executionId: theirs,
      state: { node: 'b', input: null },
      events: [{ kind: 'node.finished', node: 'a' }],
      startProcessor: 'logic.code',
    },
    {
      executionId: mine2,
      state: { node: 'b', input: { x: 2 } },
      events: [{ kind: 'node.finished', node: 'a' }],
      startProcessor: null,
    },
  ]);
  t.same(advanced, [{ owned: true, runs: 2 }, { owned: false }, { owned: true, runs: null }]);

  const ended = await endExecutions(db, me, [
    { executionId: cancelled, status: 'succeeded', output: 1, events: [] },
    {
      executionId: mine1,
      status: 'succeeded',
      output: { x: 1 },
      events: [{ kind: 'node.finished', node: 'b', attributes: { route: 'success' } }],
    },
    { executionId: theirs, status: 'failed', error: { code: 'x', message: 'y' }, events: [] },
    {
      executionId: mine2,
      status: 'failed',
      error: { code: 'boom', message: 'it failed' },
      events: [{ kind: 'node.failed', node: 'b' }],
    },
  ]);
  t.same(ended, [false, true, false, true]);

  t.same(
    kinds(await executionEvents(app, alice, flow, mine1)),
    [
      'execution.started',
      'node.started:a',
      'node.finished:a',
      'node.started:b',
      'node.finished:b',
      'execution.finished',
    ],
    'events in order, the next node.started after the finished node',
  );
  t.same(kinds(await executionEvents(app, alice, flow, mine2)), [
    'execution.started',
    'node.started:a',
    'node.finished:a',
    'node.failed:b',
    'execution.finished',
  ]);
  t.same(
    kinds(await executionEvents(app, alice, flow, theirs)),
    ['execution.started'],
    "another runner's execution got nothing",
  );
  t.same(
    kinds(await executionEvents(app, alice, flow, cancelled)),
    ['execution.started', 'execution.finished'],
    "the cancel's end only",
  );

  const rows = (
    await db.query(
      'SELECT id, status, output, error, node_runs, lease_owner FROM executions WHERE id = ANY($1::uuid[])',
      [[mine1, mine2, theirs, cancelled]],
    )
  ).rows;
  const byId = new Map(rows.map((row: any) => [row.id, row]));
  t.match(byId.get(mine1), { status: 'succeeded', output: { x: 1 }, node_runs: 2, lease_owner: null });
  t.match(byId.get(mine2), { status: 'failed', error: { code: 'boom' }, node_runs: 1, lease_owner: null });
  t.match(byId.get(theirs), { status: 'running', node_runs: 0, lease_owner: other.runnerId });
  t.match(byId.get(cancelled), { status: 'cancelled', node_runs: 0 });
  const finished = await db.query(
    `SELECT execution_id, attributes FROM session_events WHERE kind = 'execution.finished' AND execution_id = ANY($1::uuid[])`,
    [[mine1, mine2]],
  );
  t.equal(finished.rows.length, 2, 'execution.finished in the session log too');
});

t.test('the run ceiling holds per row inside a batch', async (t) => {
  const [a, b] = (await created(2)) as [string, string];
  await claimExecutions(db, me.runnerId, [a, b], 30);
  await db.query(
    `UPDATE executions SET limits = jsonb_set(limits, '{workflow.processor_runs_per_execution}', '1') WHERE id = $1`,
    [a],
  );
  t.same(
    await startNodes(db, me, [
      { executionId: a, node: 'a', processor: 'logic.code' },
      { executionId: b, node: 'a', processor: 'logic.code' },
    ]),
    [1, 1],
  );
  const advanced = await advanceNodes(
    db,
    me,
    [a, b].map((executionId) => ({
      executionId,
      state: { node: 'b', input: null },
      events: [],
      startProcessor: 'logic.code',
    })),
  );
  t.same(
    advanced,
    [
      { owned: true, runs: null },
      { owned: true, runs: 2 },
    ],
    'the execution at its ceiling advances but does not start',
  );
  t.same(await startNodes(db, me, [{ executionId: a, node: 'b', processor: 'logic.code' }]), [null]);
});

t.test('starts, outcomes and ends of different executions share one statement', async (t) => {
  const [a, b, c] = (await created(3)) as [string, string, string];
  await claimExecutions(db, me.runnerId, [a, b, c], 30);
  await startNodes(
    db,
    me,
    [b, c].map((executionId) => ({ executionId, node: 'a', processor: 'logic.code' })),
  );
  const results = await writeSteps(db, me, {
    starts: [{ executionId: a, node: 'a', processor: 'logic.code' }],
    advances: [
      {
        executionId: b,
        state: { node: 'b', input: { b: true } },
        events: [{ kind: 'node.finished', node: 'a' }],
        startProcessor: 'logic.code',
      },
    ],
    ends: [
      { executionId: c, status: 'succeeded', output: { c: true }, events: [{ kind: 'node.finished', node: 'a' }] },
    ],
  });
  t.same(results, { starts: [1], advances: [{ owned: true, runs: 2 }], ends: [true] });
  t.same(kinds(await executionEvents(app, alice, flow, a)), ['execution.started', 'node.started:a']);
  t.same(kinds(await executionEvents(app, alice, flow, b)), [
    'execution.started',
    'node.started:a',
    'node.finished:a',
    'node.started:b',
  ]);
  t.same(kinds(await executionEvents(app, alice, flow, c)), [
    'execution.started',
    'node.started:a',
    'node.finished:a',
    'execution.finished',
  ]);
});

t.test('a claim starts the node only where the interpreter would start it at once', async (t) => {
  const [fresh, noRuns, noNode, poisoned, plain] = (await created(5)) as [string, string, string, string, string];
  await db.query(
    `UPDATE executions SET limits = jsonb_set(limits, '{workflow.processor_runs_per_execution}', '0') WHERE id = $1`,
    [noRuns],
  );
  await db.query(`UPDATE executions SET state = jsonb_set(state, '{node}', '"gone"') WHERE id = $1`, [noNode]);
  // Held by a runner whose lease ran out, after three takeovers already: this claim is the fourth.
  await db.query(
    `UPDATE executions SET status = 'running', started_at = now(), deadline_at = now() + interval '1 hour', lease_owner = $2, lease_until = now() - interval '1 second', attempts = 3 WHERE id = $1`,
    [poisoned, other.runnerId],
  );

  const claimed = await claimExecutions(db, me.runnerId, [fresh, noRuns, noNode, poisoned], 30, 3);
  const byId = new Map(claimed.map((row) => [row.id, row]));
  t.match(
    byId.get(fresh),
    { prestarted: true, node_runs: 1 },
    'a fresh execution starts its first node with the claim',
  );
  t.match(byId.get(noRuns), { prestarted: false, node_runs: 0 }, 'not past processor_runs_per_execution');
  t.match(byId.get(noNode), { prestarted: false, node_runs: 0 }, 'not a node the graph lacks');
  t.match(byId.get(poisoned), { prestarted: false, attempts: 4, reason: 'recovered' }, 'not past the poison bound');
  t.same(kinds(await executionEvents(app, alice, flow, fresh)), ['execution.started', 'node.started:a']);
  t.same(kinds(await executionEvents(app, alice, flow, noRuns)), ['execution.started']);

  const [withoutBound] = await claimExecutions(db, me.runnerId, [plain], 30);
  t.match(withoutBound, { prestarted: false, node_runs: 0 }, 'without a poison bound the claim starts nothing');
});
