/**
 * Batched creates (control-plane/workflow/execution-creator.ts): creates in flight together share
 * a transaction, yet each is decided on its own — a refusal in the middle of a batch writes nothing
 * for that item and takes nothing from the others, every created execution has exactly one job,
 * and a batch that fails for another reason is retried item by item.
 */
import t from 'tap';
import { createExecutionCreator } from '../control-plane/workflow/execution-creator.ts';
import { buildTestApp, setOverride, signInAnonymous } from './helpers/app.ts';
import { executionJobs, startTestQueue } from './helpers/queue.ts';
import { createWorkflow, define } from './helpers/runner.ts';

const { app, db, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const boss = await startTestQueue(databaseUrl);
t.teardown(() => boss.stop({ graceful: false }));
const graph = { start: 'a', nodes: { a: { processor: 'logic.code', config: { code: 'export default (i) => i' } } } };

async function fields(flow: Awaited<ReturnType<typeof createWorkflow>>, definitionId: string, n: number) {
  return {
    revisionId: flow.rev,
    orgId: flow.orgId,
    blobId: flow.blobId,
    sessionRef: flow.sessionId,
    definitionRef: definitionId,
    inputJson: JSON.stringify({ n }),
    inputBytes: 7,
  };
}

t.test('one batch, two organizations: quota refusals per item, one job per created execution', async (t) => {
  const full = await createWorkflow(app, alice);
  const roomy = await createWorkflow(app, alice);
  await setOverride(app, 'workflow.running_executions_per_org', 'org', full.orgId, 2);
  const fullDef = await define(app, alice, full, graph);
  const roomyDef = await define(app, alice, roomy, graph);
  const creator = createExecutionCreator(db, boss, { maxInFlight: 1 });

  // The first create leaves alone; the rest gather behind it and leave as one batch.
  const items = [];
  for (let n = 0; n < 8; n++)
    items.push(n % 2 === 0 ? await fields(full, fullDef, n) : await fields(roomy, roomyDef, n));
  items.push({ ...(await fields(roomy, roomyDef, 99)), sessionRef: 'no-such-session' });
  const results = await Promise.all(items.map((item) => creator.create(item)));

  const fullCreated = results.filter((r, i) => i % 2 === 0 && i < 8 && !('refusal' in r));
  const fullRefused = results.filter((r, i) => i % 2 === 0 && i < 8 && 'refusal' in r);
  t.equal(fullCreated.length, 2, 'the organization at its quota gets exactly its two');
  t.equal(fullRefused.length, 2);
  for (const refused of fullRefused)
    t.match(refused, { refusal: 'limit', limit: { id: 'workflow.running_executions_per_org', value: 2 } });
  t.ok(
    results.slice(0, 4).every((r, i) => i % 2 === 1 || !('refusal' in r)),
    'the first two of the full organization are the ones created (arrival order within an organization)',
  );
  t.equal(
    results.filter((r, i) => i % 2 === 1 && i < 8 && !('refusal' in r)).length,
    4,
    "the other organization loses nothing to its neighbour's refusals",
  );
  t.same(results[8], { refusal: 'session_not_found' });

  const created = results.filter((r): r is Exclude<typeof r, { refusal: string }> => !('refusal' in r));
  for (const execution of created)
    t.equal((await executionJobs(db, execution.id)).length, 1, 'its job committed with it');
  const stored = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM executions WHERE session_id = ANY($1::uuid[])',
    [[full.sessionId, roomy.sessionId]],
  );
  t.equal(stored.rows[0]!.n, 6, 'refused items wrote nothing');
});

t.test('a batch that fails for another reason is retried item by item', async (t) => {
  const flow = await createWorkflow(app, alice);
  const definitionId = await define(app, alice, flow, graph);
  const creator = createExecutionCreator(db, boss, { maxInFlight: 1 });
  const good = await fields(flow, definitionId, 1);
  // Not JSON: the batch's statement fails as a whole; alone, only this item fails.
  const broken = { ...(await fields(flow, definitionId, 2)), inputJson: '{not json' };
  const results = await Promise.allSettled([
    creator.create(good),
    creator.create(good),
    creator.create(broken),
    creator.create(good),
  ]);
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
  );
  const stored = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM executions WHERE session_id = $1::uuid',
    [flow.sessionId],
  );
  t.equal(stored.rows[0]!.n, 3);
});

t.test(
  'two control planes batching on the same organizations at once: the quota holds exactly, no deadlock, one job each',
  async (t) => {
    const a = await createWorkflow(app, alice);
    const b = await createWorkflow(app, alice);
    await setOverride(app, 'workflow.running_executions_per_org', 'org', a.orgId, 5);
    await setOverride(app, 'workflow.running_executions_per_org', 'org', b.orgId, 5);
    const aDef = await define(app, alice, a, graph);
    const bDef = await define(app, alice, b, graph);
    // One creator each, as two control plane processes have: one batch in flight per creator, so
    // the two batches race on both organizations' rows (submitted in opposite orders).
    const one = createExecutionCreator(db, boss);
    const two = createExecutionCreator(db, boss);
    const items = [];
    for (let n = 0; n < 8; n++) items.push(await fields(a, aDef, n), await fields(b, bDef, n));
    const results = await Promise.all([
      ...items.map((item) => one.create(item)),
      ...[...items].reverse().map((item) => two.create(item)),
    ]);

    const created = results.filter((r): r is Exclude<typeof r, { refusal: string }> => !('refusal' in r));
    t.equal(created.length, 10, 'five per organization of the 32 asked for');
    t.equal(
      results.filter((r) => 'refusal' in r && r.refusal === 'limit').length,
      22,
      'every other one refused on the quota',
    );
    const stored = await db.query<{ org: string; n: number }>(
      'SELECT org_id::text AS org, count(*)::int AS n FROM executions WHERE session_id = ANY($1::uuid[]) GROUP BY org_id ORDER BY org_id',
      [[a.sessionId, b.sessionId]],
    );
    t.same(
      stored.rows.map((row) => row.n),
      [5, 5],
    );
    for (const execution of created)
      t.equal((await executionJobs(db, execution.id)).length, 1, 'its job committed with it');
  },
);
