/**
 * `sessions.executions_count` (migration 014) is what `workflow.executions_per_session` reads: it
 * must equal the session's executions after creates, deletes of many sessions' executions in one
 * statement (what the retention sweep does), and cascades, or a quota drifts.
 */
import t from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous } from './helpers/app.ts';
import { command, createWorkflow, define, startExecution } from './helpers/runner.ts';

const { app, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const graph = { start: 'a', nodes: { a: { processor: 'logic.code', config: { code: 'export default (i) => i' } } } };

async function drift(): Promise<Array<{ id: string; kept: number; counted: number }>> {
  const { rows } = await db.query<{ id: string; kept: number; counted: number }>(
    `SELECT s.id, s.executions_count AS kept, (SELECT count(*)::int FROM executions e WHERE e.session_id = s.id) AS counted
       FROM sessions s WHERE s.executions_count <> (SELECT count(*) FROM executions e WHERE e.session_id = s.id)`,
  );
  return rows;
}

t.test('the kept count follows creates, bulk deletes and cascades', async (t) => {
  const flow = await createWorkflow(app, alice);
  const definitionId = await define(app, alice, flow, graph);
  const second = (await command(app, alice, flow.rev, 'create_session', {})).session.id as string;
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await startExecution(app, alice, flow, definitionId, { i })).id);
  for (let i = 0; i < 3; i++)
    ids.push(
      (await command(app, alice, flow.rev, 'create_execution', { session_id: second, definition_id: definitionId }))
        .execution.id,
    );
  t.same(await drift(), [], 'after creates');

  // One statement over both sessions, like a retention batch.
  await db.query('DELETE FROM executions WHERE id = ANY($1::uuid[])', [[ids[0], ids[1], ids[5]]]);
  t.same(await drift(), [], 'after a delete across sessions');
  const { rows } = await db.query<{ n: number }>('SELECT executions_count AS n FROM sessions WHERE id = $1', [second]);
  t.equal(rows[0]!.n, 2);

  await command(app, alice, flow.rev, 'delete_session', { session_id: second });
  t.same(await drift(), [], 'after a session is deleted with its executions');
});

t.test('a freed slot can be taken again; the quota refuses exactly at the limit', async (t) => {
  const flow = await createWorkflow(app, alice);
  const definitionId = await define(app, alice, flow, graph);
  await setOverride(app, 'workflow.executions_per_session', 'blob', flow.blobId, 2);
  const first = await startExecution(app, alice, flow, definitionId);
  await startExecution(app, alice, flow, definitionId);
  const refused = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_execution`, {
    as: alice,
    body: { session_id: flow.sessionId, definition_id: definitionId },
  });
  t.equal(refused.status, 400);
  t.match(
    refused.body,
    { error: 'limit_exceeded', limit: { id: 'workflow.executions_per_session', value: 2 } },
    'the third is refused',
  );
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM executions WHERE session_id = $1', [
    flow.sessionId,
  ]);
  t.equal(rows[0]!.n, 2);
  await db.query('DELETE FROM executions WHERE id = $1', [first.id]);
  await startExecution(app, alice, flow, definitionId);
  t.same(await drift(), []);
});
