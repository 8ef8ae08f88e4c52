/**
 * What one account may keep stored beyond the limits catalog (docs/operations.md, "What one tenant
 * can do to the others"): stored idempotent answers per account (429 `rate_limited` past them),
 * NLP records and graph elements per revision, graph elements per session (409 `conflict`). Small
 * bounds are configured here;
 * each count holds under concurrent writers.
 */
import t from 'tap';
import { buildTestApp, call, signInAnonymous, type Caller } from './helpers/app.ts';
import { createBlob, createOrg, uniqueAlias } from './helpers/resources.ts';
import { runRetentionSweep } from '../shared/retention/sweep.ts';

const { app, db } = await buildTestApp(t, {
  IDEMPOTENT_ANSWERS_PER_ACCOUNT: '3',
  IDEMPOTENT_BYTES_PER_ACCOUNT: '20000',
  NLP_RECORDS_PER_REVISION: '50',
  NLP_BYTES_PER_REVISION: '4000',
  GRAPH_ELEMENTS_PER_REVISION: '10',
  GRAPH_BYTES_PER_REVISION: '3000',
  GRAPH_ELEMENTS_PER_SESSION: '10',
  GRAPH_BYTES_PER_SESSION: '3000',
});

const post = (caller: Caller, rev: string, name: string, body: unknown, headers: Record<string, string> = {}) =>
  call(app, 'POST', `/v1/revisions/${rev}/${name}`, { headers: { ...caller.headers, ...headers }, body });

async function orgsOf(caller: Caller): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM orgs WHERE owner_id = $1::uuid', [
    caller.user.id,
  ]);
  return rows[0]!.n;
}

const keyedOrg = (caller: Caller, key: string, name = 'Org') =>
  call(app, 'POST', '/v1/orgs', {
    headers: { ...caller.headers, 'idempotency-key': key },
    body: { alias: uniqueAlias('org'), name },
  });

t.test('stored idempotent answers: at most the bound per account, then 429 with Retry-After', async (t) => {
  const alice = await signInAnonymous(app);
  for (const key of ['a1', 'a2', 'a3']) t.equal((await keyedOrg(alice, key)).status, 201, key);
  const before = await orgsOf(alice);
  const fourth = await keyedOrg(alice, 'a4');
  t.equal(fourth.status, 429);
  t.equal(fourth.body.error, 'rate_limited');
  t.match(fourth.body.message, /idempotent answers/);
  t.ok(Number(fourth.res.headers['retry-after']) > 0, 'Retry-After');
  t.equal(await orgsOf(alice), before, 'the refused create rolled back');
  const replay = await keyedOrg(alice, 'a1');
  t.equal(replay.status, 409, 'a stored key still answers as before (here: another body)');
  const unkeyed = await call(app, 'POST', '/v1/orgs', { as: alice, body: { alias: uniqueAlias('org') } });
  t.equal(unkeyed.status, 201, 'a request without a key is not counted');
  // Another account has its own count.
  const bob = await signInAnonymous(app);
  t.equal((await keyedOrg(bob, 'a4')).status, 201);
  // Answers past their 24 hours free their count, before the retention sweep removes them.
  await db.query(
    "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE caller = $1 AND key = 'a1'",
    [`user:${alice.user.id}`],
  );
  t.equal((await keyedOrg(alice, 'a4')).status, 201, 'an expired answer made room');
  await db.query(
    "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE caller = $1 AND key = 'a2'",
    [`user:${alice.user.id}`],
  );
  await runRetentionSweep(db);
  t.equal((await keyedOrg(alice, 'a5')).status, 201, 'the sweep freed what it removed');
  t.equal((await keyedOrg(alice, 'a6')).status, 429);
});

t.test('stored idempotent answers: bytes are bounded too', async (t) => {
  const carol = await signInAnonymous(app);
  const org = await createOrg(app, carol);
  const { revision } = await createBlob(app, carol, org.id);
  // A definition's answer holds its graph: 12 KB each, so the second passes 20,000 bytes.
  const graph = (n: number) => ({
    start: 'a',
    nodes: { a: { processor: 'logic.code', config: { code: `export default () => 1; // ${`${n}`.repeat(12_000)}` } } },
  });
  const create = (key: string, n: number) =>
    post(
      carol,
      revision.id,
      'create_definition',
      { category: 'workflow', graph: graph(n) },
      { 'idempotency-key': key },
    );
  const first = await create('d1', 1);
  t.equal(first.status, 200, JSON.stringify(first.body).slice(0, 200));
  const second = await create('d2', 2);
  t.equal(second.status, 429);
  t.equal(second.body.error, 'rate_limited');
});

t.test('stored idempotent answers: the count holds under concurrent requests', async (t) => {
  const dave = await signInAnonymous(app);
  const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => keyedOrg(dave, `c${i}`)));
  t.equal(answers.filter((a) => a.status === 201).length, 3, 'three stored');
  t.equal(answers.filter((a) => a.status === 429).length, 7, 'the rest refused');
  t.equal(await orgsOf(dave), 3);
});

t.test('NLP records: at most the bound per revision, counted under concurrency', async (t) => {
  const erin = await signInAnonymous(app);
  const org = await createOrg(app, erin);
  const { revision } = await createBlob(app, erin, org.id, { type: 'svc.dataset.nlp' });
  const records = (n: number, text = 'x') => ({ records: Array.from({ length: n }, () => ({ text })) });
  t.same((await post(erin, revision.id, 'upload_records', records(40))).body, {
    status: 'success',
    uploaded: 40,
    total: 40,
  });
  const over = await post(erin, revision.id, 'upload_records', records(11));
  t.equal(over.status, 409);
  t.equal(over.body.error, 'conflict');
  t.match(over.body.message, /NLP_RECORDS_PER_REVISION/);
  t.same((await post(erin, revision.id, 'upload_records', records(10))).body.total, 50, 'up to the bound');
  // Bytes: 3 records of 1,500 characters pass 4,000 bytes.
  const { revision: other } = await createBlob(app, erin, org.id, { type: 'svc.dataset.nlp' });
  const big = await post(erin, other.id, 'upload_records', records(3, 'y'.repeat(1500)));
  t.equal(big.status, 409);
  t.match(big.body.message, /NLP_BYTES_PER_REVISION/);
  // Five concurrent uploads of 20 into an empty revision: two fit.
  const { revision: fresh } = await createBlob(app, erin, org.id, { type: 'svc.dataset.nlp' });
  const answers = await Promise.all(
    Array.from({ length: 5 }, () => post(erin, fresh.id, 'upload_records', records(20))),
  );
  t.equal(answers.filter((a) => a.status === 200).length, 2);
  t.equal(answers.filter((a) => a.status === 409).length, 3);
  const revisionRead = await call(app, 'GET', `/v1/revisions/${fresh.id}`, { as: erin });
  t.equal(revisionRead.body.revision.counts.records, 40);
});

t.test('graph elements: at most the bound per revision; deleting makes room', async (t) => {
  const finn = await signInAnonymous(app);
  const org = await createOrg(app, finn);
  const { revision } = await createBlob(app, finn, org.id, { type: 'svc.graph.graphdb' });
  const nodes = (from: number, n: number, properties: Record<string, unknown> = {}) => ({
    mutations: Array.from({ length: n }, (_, i) => ({ op: 'upsert_node', id: `n${from + i}`, label: 'p', properties })),
  });
  t.equal((await post(finn, revision.id, 'mutate_graph', nodes(0, 8))).status, 200);
  const over = await post(finn, revision.id, 'mutate_graph', nodes(8, 3));
  t.equal(over.status, 409);
  t.equal(over.body.error, 'conflict');
  t.match(over.body.message, /GRAPH_ELEMENTS_PER_REVISION/);
  t.equal((await post(finn, revision.id, 'mutate_graph', nodes(0, 8))).status, 200, 'replacing adds nothing');
  const trim = await post(finn, revision.id, 'mutate_graph', {
    mutations: [
      { op: 'delete', id: 'n0' },
      { op: 'delete', id: 'n1' },
    ],
  });
  t.equal(trim.status, 200);
  t.equal((await post(finn, revision.id, 'mutate_graph', nodes(8, 4))).status, 200, 'room made by deleting');
  // Bytes: properties of 1,000 characters on three nodes pass 3,000 bytes.
  const { revision: other } = await createBlob(app, finn, org.id, { type: 'svc.graph.graphdb' });
  const heavy = await post(finn, other.id, 'mutate_graph', nodes(0, 3, { text: 'z'.repeat(1000) }));
  t.equal(heavy.status, 409);
  t.match(heavy.body.message, /GRAPH_BYTES_PER_REVISION/);
  // Concurrent writers: five calls of 4 nodes each into an empty revision, two fit.
  const { revision: fresh } = await createBlob(app, finn, org.id, { type: 'svc.graph.graphdb' });
  const answers = await Promise.all(
    Array.from({ length: 5 }, (_, i) => post(finn, fresh.id, 'mutate_graph', nodes(i * 4, 4))),
  );
  t.equal(answers.filter((a) => a.status === 200).length, 2);
  t.equal(answers.filter((a) => a.status === 409).length, 3);
});

t.test('session graph elements: at most the bound per session; deleting makes room', async (t) => {
  const gail = await signInAnonymous(app);
  const org = await createOrg(app, gail);
  const { revision } = await createBlob(app, gail, org.id);
  const session = async () => {
    const res = await post(gail, revision.id, 'create_session', {});
    t.equal(res.status, 200, 'session created');
    return res.body.session.id as string;
  };
  const mutate = (sessionId: string, mutations: unknown[]) =>
    post(gail, revision.id, 'mutate_session_graph', { session_id: sessionId, mutations });
  const nodes = (from: number, n: number, properties: Record<string, unknown> = {}) =>
    Array.from({ length: n }, (_, i) => ({ op: 'upsert_node', id: `n${from + i}`, label: 'p', properties }));
  const first = await session();
  t.equal((await mutate(first, nodes(0, 8))).status, 200);
  const over = await mutate(first, [
    ...nodes(8, 1),
    { op: 'upsert_edge', id: 'e0', label: 'l', source: 'n0', target: 'n8' },
    ...nodes(9, 1),
  ]);
  t.equal(over.status, 409);
  t.equal(over.body.error, 'conflict');
  t.match(over.body.message, /GRAPH_ELEMENTS_PER_SESSION/);
  const listed = await post(gail, revision.id, 'list_session_graph_elements', { session_id: first, limit: 200 });
  t.equal(listed.body.elements.length, 8, 'the refused call wrote nothing');
  t.equal((await mutate(first, nodes(0, 8))).status, 200, 'replacing adds nothing');
  t.equal(
    (
      await mutate(first, [
        { op: 'delete', id: 'n0' },
        { op: 'delete', id: 'n1' },
      ])
    ).status,
    200,
  );
  t.equal((await mutate(first, nodes(8, 4))).status, 200, 'room made by deleting');
  // Another session of the same revision has its own count.
  t.equal((await mutate(await session(), nodes(0, 10))).status, 200, 'another session');
  // Bytes: properties of 1,000 characters on three nodes pass 3,000 bytes.
  const heavy = await mutate(await session(), nodes(0, 3, { text: 'z'.repeat(1000) }));
  t.equal(heavy.status, 409);
  t.match(heavy.body.message, /GRAPH_BYTES_PER_SESSION/);
  // Concurrent writers: five calls of 4 nodes each into an empty session, two fit.
  const fresh = await session();
  const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => mutate(fresh, nodes(i * 4, 4))));
  t.equal(answers.filter((a) => a.status === 200).length, 2);
  t.equal(answers.filter((a) => a.status === 409).length, 3);
});
