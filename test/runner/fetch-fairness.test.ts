/**
 * Fairness in what runners fetch (shared/queue/execution-jobs.ts, `fairPriority`): one
 * organization's backlog does not delay another organization's first execution by more than a
 * fetch. Executions are created while no runner is up, then a runner that takes a few at a time
 * starts: the other organization's execution, created last, is among the first claimed.
 */
import t from 'tap';
import { fairPriority } from '../../shared/queue/execution-jobs.ts';
import { buildTestApp, setOverride, signInAnonymous } from '../helpers/app.ts';
import { createWorkflow, define, startExecution, startEngine, waitForEnd } from '../helpers/runner.ts';

const { app, databaseUrl, db } = await buildTestApp(t);

const GRAPH = {
  start: 'one',
  nodes: { one: { processor: 'logic.code', config: { code: 'export default (input) => input' } } },
};

t.test("the k-th unfinished execution of an organization waits behind every organization's first k", async (t) => {
  t.equal(fairPriority(undefined), 0);
  t.equal(fairPriority(1), 0, "an organization's only execution goes first");
  t.equal(fairPriority(2), -1);
  t.equal(fairPriority(100_001), -100_000);
  t.equal(fairPriority(Number.MAX_SAFE_INTEGER), -2_000_000_000, "clamped to pg-boss's integer priority");
});

t.test("a backlog of one organization does not hold back another organization's first execution", async (t) => {
  const busy = await signInAnonymous(app);
  const other = await signInAnonymous(app);
  const backlog = await createWorkflow(app, busy);
  await setOverride(app, 'workflow.running_executions_per_org', 'org', backlog.orgId, 1000);
  const backlogDefinition = await define(app, busy, backlog, GRAPH);
  const backlogIds: string[] = [];
  for (let i = 0; i < 40; i++) backlogIds.push((await startExecution(app, busy, backlog, backlogDefinition, i)).id);
  const flow = await createWorkflow(app, other);
  const first = await startExecution(app, other, flow, await define(app, other, flow, GRAPH), 'me');

  const { rows: jobs } = await db.query<{ execution_id: string; priority: number }>(
    `SELECT data->>'execution_id' AS execution_id, priority FROM pgboss.job WHERE name = 'executions' AND data->>'execution_id' = ANY($1::text[])`,
    [[...backlogIds, first.id]],
  );
  const priorityOf = new Map(jobs.map((job) => [job.execution_id, job.priority]));
  t.equal(priorityOf.get(first.id), 0);
  t.equal(priorityOf.get(backlogIds[0]!), 0);
  // Creates batched together may read their organization's count in one snapshot: ±1 per batch.
  t.ok(
    priorityOf.get(backlogIds[39]!)! <= -30,
    `the backlog's last wake-up waits behind the rest (${priorityOf.get(backlogIds[39]!)})`,
  );

  // A runner that fetches and works on 4 at a time.
  await startEngine(t, databaseUrl, { batchSize: 4, concurrency: 4 });
  const ended = await waitForEnd(app, other, flow, first.id);
  t.equal(ended.status, 'succeeded');
  const {
    rows: [ahead],
  } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM executions WHERE id = ANY($1::uuid[]) AND started_at < $2::timestamptz',
    [backlogIds, ended.started_at],
  );
  t.ok(ahead!.n <= 4, `at most one fetch of the backlog started before it (${ahead!.n} did)`);
  for (const id of backlogIds) t.equal((await waitForEnd(app, busy, backlog, id)).status, 'succeeded');
});
