/**
 * A runner abandoned (a simulated kill -9) or closed writes nothing more, even from an engine
 * thread that opened after the runner decided: the claim starts an execution's node before the
 * execution reaches a thread, and a thread opens its signal channel only at its first task, so a
 * broadcast in between reached no one (runner/engine/thread-pool.ts keeps the runner-wide decisions
 * in shared memory as well).
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { claimExecutions } from '../../runner/engine/claim.ts';
import { EngineThreadPool } from '../../runner/engine/thread-pool.ts';
import { DEFAULT_SESSION_GRAPH_BOUNDS } from '../../shared/graph/session-graph-usage.ts';
import { watchdogPlan } from '../../sandbox/memory-bound.ts';
import { buildTestApp, signInAnonymous } from '../helpers/app.ts';
import { createWorkflow, executionEvents, runGraph } from '../helpers/runner.ts';

const { app, databaseUrl, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);

function code(source: string): Record<string, unknown> {
  return { processor: 'logic.code', config: { code: source } };
}

async function status(executionId: string): Promise<string> {
  const { rows } = await db.query<{ status: string }>('SELECT status FROM executions WHERE id = $1', [executionId]);
  return rows[0]!.status;
}

t.test('an engine thread that opens after its runner was abandoned writes nothing', async (t) => {
  // The claim itself starts the node, before the execution reaches an engine thread; a thread
  // opens its signal channel at its first task. A runner abandoned in between once broadcast
  // 'dead' to no one, and the thread ran the node and wrote its outcome under the lease it still
  // held (under load, the pool's later 'close' ended the run with "The sandbox process stopped
  // during the run." and that failure was the node's outcome).
  const flow = await createWorkflow(app, alice);
  const created = await runGraph(app, alice, flow, { start: 'one', nodes: { one: code('export default () => 1') } });
  const runnerId = randomUUID();
  const [claimed] = await claimExecutions(db, runnerId, [created.id], 30, 3);
  t.ok(claimed?.prestarted, 'claimed, its node started by the claim');
  const pool = new EngineThreadPool({
    databaseUrl,
    runnerId,
    leaseSeconds: 30,
    maxRecoveries: 3,
    concurrency: 1,
    threads: 1,
    graphBounds: DEFAULT_SESSION_GRAPH_BOUNDS,
    nodeRunValueBytes: 0,
    isolatesPerThread: 1,
    onNotice: () => {},
  });
  pool.start(watchdogPlan(1280));
  t.teardown(() => pool.destroy());
  pool.signal({ type: 'dead', executionIds: 'all' });
  t.same(await pool.execute(claimed!), { outcome: 'abandoned' });
  await pool.destroy();
  const events = await executionEvents(app, alice, flow, created.id);
  t.same(
    events.map((event) => event.kind),
    ['execution.started', 'node.started'],
    'nothing written after the claim',
  );
  t.equal(await status(created.id), 'running', 'left to the recovery sweep, as a killed runner leaves it');
});
