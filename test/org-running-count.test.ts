/**
 * `workflow.running_executions_per_org` is kept as two totals (migration 015): executions started
 * on the organization's row, ends counted per organization and database connection. They must
 * equal the unfinished executions after every way an execution stops running — ended by a
 * runner, cancelled, deleted unfinished by a cascade — and after the sweep compacts the ends of
 * closed connections; ends on different connections must never wait on each other.
 */
import pg from 'pg';
import t from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous } from './helpers/app.ts';
import {
  command,
  createWorkflow,
  define,
  runningHeld,
  startExecution,
  startEngine,
  waitFor,
  waitForEnd,
  type Workflow,
} from './helpers/runner.ts';

const { app, databaseUrl, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const graph = { start: 'a', nodes: { a: { processor: 'logic.code', config: { code: 'export default (i) => i' } } } };
// Never claimed while no runner runs; cancelled or deleted while queued.
const LONG = { start: 'nap', nodes: { nap: { processor: 'logic.sleep', config: { seconds: 60 } } } };

/** Organizations whose kept count differs from their unfinished executions. */
async function drift(): Promise<Array<{ id: string; kept: number; counted: number }>> {
  const { rows } = await db.query<{ id: string; kept: number; counted: number }>(
    `SELECT o.id, org_running_executions(o.id) AS kept,
            (SELECT count(*)::int FROM executions e WHERE e.org_id = o.id AND e.ended_at IS NULL) AS counted
       FROM orgs o
      WHERE org_running_executions(o.id) <> (SELECT count(*) FROM executions e WHERE e.org_id = o.id AND e.ended_at IS NULL)`,
  );
  return rows;
}

async function flowWith(quota: number): Promise<{ flow: Workflow; quick: string; long: string }> {
  const flow = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.running_executions_per_org', 'org', flow.orgId, quota);
  return { flow, quick: await define(app, alice, flow, graph), long: await define(app, alice, flow, LONG) };
}

t.test('the kept count follows creates, cancels, runs to the end and cascades', async (t) => {
  const a = await flowWith(20);
  const b = await flowWith(20);
  const queued = [];
  for (let i = 0; i < 4; i++) queued.push(await startExecution(app, alice, a.flow, a.long));
  for (let i = 0; i < 3; i++) await startExecution(app, alice, b.flow, b.long);
  t.same(await drift(), [], 'after creates');
  t.equal(await runningHeld(app, alice, a.flow.orgId), 4);

  await command(app, alice, a.flow.rev, 'cancel_execution', { execution_id: queued[0]!.id });
  t.same(await drift(), [], 'after a cancel');
  t.equal(await runningHeld(app, alice, a.flow.orgId), 3);

  // Ended by a runner (its step statement), on connections of the runner's own.
  const runner = await startEngine(t, databaseUrl);
  const quick = await startExecution(app, alice, a.flow, a.quick);
  t.equal((await waitForEnd(app, alice, a.flow, quick.id)).status, 'succeeded');
  await runner.stop();
  t.same(await drift(), [], 'after a runner ended one');
  t.equal(await runningHeld(app, alice, a.flow.orgId), 3, 'the sleeping ones still count');

  // Unfinished executions deleted by a cascade: a session, then a whole organization.
  await command(app, alice, b.flow.rev, 'delete_session', { session_id: b.flow.sessionId });
  // The rows go in the background, right after the answer.
  await waitFor(
    async () => (await db.query('SELECT 1 FROM sessions WHERE id = $1', [b.flow.sessionId])).rowCount,
    (n) => n === 0,
    "the session's removal",
  );
  t.same(await drift(), [], 'after a session was deleted with its unfinished executions');
  t.equal(await runningHeld(app, alice, b.flow.orgId), 0);
  const deleted = await call(app, 'DELETE', `/v1/orgs/${a.flow.orgId}`, { as: alice });
  t.equal(deleted.status, 200);
  t.same(await drift(), [], 'after an organization was deleted with its unfinished executions');

  // The sweep's compaction drops the counts of the organization that is gone.
  await db.query('SELECT compact_execution_ends()');
  const { rows } = await db.query('SELECT 1 FROM execution_ends WHERE org_id = $1', [a.flow.orgId]);
  t.equal(rows.length, 0, 'nothing is left of the deleted organization');
});

t.test('a freed slot is taken again; the quota refuses exactly at the limit', async (t) => {
  const { flow, long } = await flowWith(2);
  const first = await startExecution(app, alice, flow, long);
  await startExecution(app, alice, flow, long);
  const refused = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_execution`, {
    as: alice,
    body: { session_id: flow.sessionId, definition_id: long },
  });
  t.equal(refused.status, 400);
  t.match(refused.body, { error: 'limit_exceeded', limit: { id: 'workflow.running_executions_per_org', value: 2 } });
  await command(app, alice, flow.rev, 'cancel_execution', { execution_id: first.id });
  await startExecution(app, alice, flow, long);
  const again = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_execution`, {
    as: alice,
    body: { session_id: flow.sessionId, definition_id: long },
  });
  t.equal(again.status, 400, 'full again after the freed slot was taken');
  t.same(await drift(), []);
});

t.test('an execution whose end is undone counts as running again', async (t) => {
  const { flow, long } = await flowWith(10);
  const { id } = await startExecution(app, alice, flow, long);
  await db.query(`UPDATE executions SET status = 'cancelled', ended_at = now() WHERE id = $1`, [id]);
  t.equal(await runningHeld(app, alice, flow.orgId), 0);
  // No path of the service does this; the count must still follow the rows if anything does.
  await db.query(`UPDATE executions SET status = 'queued', ended_at = NULL WHERE id = $1`, [id]);
  t.equal(await runningHeld(app, alice, flow.orgId), 1);
  t.same(await drift(), []);
});

t.test('compaction folds the ends of closed connections and changes no count', async (t) => {
  const { flow, long } = await flowWith(50);
  const ids = [];
  for (let i = 0; i < 6; i++) ids.push((await startExecution(app, alice, flow, long)).id);
  // Ends on three connections that then close, as pooled connections do.
  for (const id of ids.slice(0, 3)) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(
      `UPDATE executions SET status = 'cancelled', ended_at = now(), lease_owner = NULL, lease_until = NULL WHERE id = $1`,
      [id],
    );
    await client.end();
  }
  const rowsOf = async () =>
    (
      await db.query<{ backend: number; ended: string }>(
        'SELECT backend, ended FROM execution_ends WHERE org_id = $1 ORDER BY backend',
        [flow.orgId],
      )
    ).rows;
  t.equal((await rowsOf()).length, 3, 'one row per connection');
  t.equal(await runningHeld(app, alice, flow.orgId), 3);

  // The server notices a closed connection a moment after the client left.
  let removed = 0;
  for (let attempt = 0; attempt < 100 && removed < 3; attempt++) {
    removed += (await db.query<{ n: number }>('SELECT compact_execution_ends() AS n')).rows[0]!.n;
    if (removed < 3) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.equal(removed, 3);
  t.same(await rowsOf(), [{ backend: 0, ended: '3' }], "folded into the organization's row 0");
  t.equal(await runningHeld(app, alice, flow.orgId), 3, 'the count is unchanged');
  t.same(await drift(), []);
});

t.test("an organization's counts go with it, row 0 included, without waiting for a compaction", async (t) => {
  const { flow, long } = await flowWith(10);
  await startExecution(app, alice, flow, long);
  await db.query('INSERT INTO execution_ends (org_id, backend, ended) VALUES ($1, 0, 7)', [flow.orgId]);
  const deleted = await call(app, 'DELETE', `/v1/orgs/${flow.orgId}`, { as: alice });
  t.equal(deleted.status, 200);
  const left = async () =>
    (await db.query<{ backend: number }>('SELECT backend FROM execution_ends WHERE org_id = $1', [flow.orgId])).rows;
  t.notOk(
    (await left()).some((r) => r.backend === 0),
    'row 0 went with the organization',
  );
  // The ends its cascade counted are rows of this connection: the next compaction drops them.
  await db.query('SELECT compact_execution_ends()');
  t.same(await left(), [], 'nothing is left after a compaction');
});

t.test('compaction never waits: a row being written is skipped until the next call', async (t) => {
  const { flow } = await flowWith(10);
  // A row of a connection id no backend has (pids are below 2^22), held locked by a transaction
  // as an end on a recycled id would hold it.
  await db.query('INSERT INTO execution_ends (org_id, backend, ended) VALUES ($1, 4194303, 2)', [flow.orgId]);
  const holder = new pg.Client({ connectionString: databaseUrl });
  await holder.connect();
  t.teardown(() => holder.end());
  await holder.query('BEGIN');
  await holder.query('UPDATE execution_ends SET ended = ended + 1 WHERE org_id = $1 AND backend = 4194303', [
    flow.orgId,
  ]);
  const compactor = new pg.Client({ connectionString: databaseUrl });
  await compactor.connect();
  t.teardown(() => compactor.end());
  await compactor.query(`SET lock_timeout = '2s'`);
  const compactRow = async () =>
    (await compactor.query('SELECT 1 FROM execution_ends WHERE org_id = $1 AND backend = 4194303', [flow.orgId]))
      .rowCount;
  await compactor.query('SELECT compact_execution_ends()');
  t.equal(await compactRow(), 1, 'skipped while locked, without waiting');
  await holder.query('COMMIT');
  await compactor.query('SELECT compact_execution_ends()');
  t.equal(await compactRow(), 0, 'folded once free');
  const { rows } = await db.query<{ ended: string }>(
    'SELECT ended FROM execution_ends WHERE org_id = $1 AND backend = 0',
    [flow.orgId],
  );
  t.same(rows, [{ ended: '3' }], 'with the committed write');
  // The row counted no execution of this organization's: take it out again.
  await db.query('DELETE FROM execution_ends WHERE org_id = $1', [flow.orgId]);
});

t.test('ends on different connections never wait on each other, in any order of organizations', async (t) => {
  const a = await flowWith(10);
  const b = await flowWith(10);
  const [a1, a2, b1, b2] = [
    await startExecution(app, alice, a.flow, a.long),
    await startExecution(app, alice, a.flow, a.long),
    await startExecution(app, alice, b.flow, b.long),
    await startExecution(app, alice, b.flow, b.long),
  ];
  const end = `UPDATE executions SET status = 'cancelled', ended_at = now(), lease_owner = NULL, lease_until = NULL WHERE id = $1`;
  const one = new pg.Client({ connectionString: databaseUrl });
  const two = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([one.connect(), two.connect()]);
  t.teardown(async () => {
    await one.end();
    await two.end();
  });
  // A wait would fail the statement instead of hanging the test (or deadlocking).
  for (const client of [one, two]) await client.query(`BEGIN; SET LOCAL lock_timeout = '2s'`);
  await one.query(end, [a1!.id]);
  await two.query(end, [b1!.id]);
  await one.query(end, [b2!.id]);
  await two.query(end, [a2!.id]);
  t.equal(await runningHeld(app, alice, a.flow.orgId), 2, 'uncommitted ends are not seen yet');
  await one.query('COMMIT');
  await two.query('COMMIT');
  t.equal(await runningHeld(app, alice, a.flow.orgId), 0);
  t.equal(await runningHeld(app, alice, b.flow.orgId), 0);
  t.same(await drift(), []);
});
