/**
 * Graph blobs (docs/blob-types.md "Graph blobs"): mutate_graph and query_graph on a
 * `svc.graph.graphdb` revision, each revision its own graph, with the session graph's element
 * shape and query engine; results cut to graphdb.query_results (50) with `truncated`, never
 * refused for their size; graphdb.enabled checked.
 */
import t from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous } from '../helpers/app.ts';
import { createBlob, createOrg, createRevision } from '../helpers/resources.ts';
import { command } from '../helpers/runner.ts';

const { app, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const stranger = await signInAnonymous(app);
const org = await createOrg(app, alice);
const { blob, revision } = await createBlob(app, alice, org.id, { type: 'svc.graph.graphdb' });

const post = (rev: string, name: string, body: unknown, as = alice) =>
  call(app, 'POST', `/v1/revisions/${rev}/${name}`, { as, body });
const node = (id: string, label = 'person', properties: Record<string, unknown> = {}) => ({
  op: 'upsert_node',
  id,
  label,
  properties,
});
const edge = (id: string, source: string, target: string, label = 'knows') => ({
  op: 'upsert_edge',
  id,
  label,
  source,
  target,
});

t.test('mutate_graph writes elements; query_graph walks them like a session graph', async (t) => {
  const written = await command(app, alice, revision.id, 'mutate_graph', {
    mutations: [
      node('ada', 'person', { lang: 'en' }),
      node('bob'),
      node('cy'),
      edge('e1', 'ada', 'bob'),
      edge('e2', 'bob', 'cy'),
    ],
  });
  t.same(
    written.elements.map((e: { id: string }) => e.id),
    ['ada', 'bob', 'cy', 'e1', 'e2'],
  );
  t.same(written.elements[3], { id: 'e1', kind: 'edge', label: 'knows', source: 'ada', target: 'bob', properties: {} });
  const result = await command(app, alice, revision.id, 'query_graph', {
    query: { start: { ids: ['ada'] }, steps: [{ direction: 'out', edge_label: 'knows', min: 1, max: 2 }] },
  });
  t.same(
    result.nodes.map((n: { id: string }) => n.id),
    ['ada', 'bob', 'cy'],
  );
  t.same(
    result.edges.map((e: { id: string }) => e.id),
    ['e1', 'e2'],
  );
  t.same(result.ends, ['bob', 'cy']);
  t.equal(result.truncated, false);
  const byLabel = await command(app, alice, revision.id, 'query_graph', {
    query: { start: { label: 'person', where: { lang: 'en' } } },
  });
  t.same(
    byLabel.nodes.map((n: { id: string }) => n.id),
    ['ada'],
  );
});

t.test('a mutation naming a missing node is refused, and nothing of the call is kept', async (t) => {
  const res = await post(revision.id, 'mutate_graph', { mutations: [node('dan'), edge('e9', 'dan', 'nobody')] });
  t.equal(res.status, 409);
  t.match(res.body, { status: 'failure', error: 'conflict', message: /mutations\[1\].*nobody/ });
  const dan = await command(app, alice, revision.id, 'query_graph', { query: { start: { ids: ['dan'] } } });
  t.same(dan.nodes, [], 'dan was rolled back with the call');
  const bad = await post(revision.id, 'mutate_graph', { mutations: [{ op: 'upsert_node', id: 'x y', label: 'l' }] });
  t.equal(bad.status, 400);
  t.equal(bad.body.error, 'invalid_request_body');
  const tooMany = await post(revision.id, 'mutate_graph', {
    mutations: Array.from({ length: 41 }, (_, i) => node(`n${i}`)),
  });
  t.equal(tooMany.status, 400);
  t.match(tooMany.body, {
    error: 'graph_mutation_too_large',
    limit: { id: 'workflow.graph_mutations_per_call', value: 40 },
  });
});

t.test('results past graphdb.query_results (50) are dropped with truncated: true, never refused', async (t) => {
  const { revision: big } = await createBlob(app, alice, org.id, { type: 'svc.graph.graphdb' });
  for (let batch = 0; batch < 2; batch++) {
    await command(app, alice, big.id, 'mutate_graph', {
      mutations: Array.from({ length: 30 }, (_, i) => node(`p${batch * 30 + i}`, 'item')),
    });
  }
  const all = await command(app, alice, big.id, 'query_graph', { query: { start: { label: 'item' } } });
  t.equal(all.nodes.length, 50);
  t.equal(all.truncated, true);
  t.same(
    all.nodes.map((n: { id: string }) => n.id),
    Array.from({ length: 50 }, (_, i) => `p${i}`),
    'the first 50 in creation order',
  );
  const { revision: small } = await createBlob(app, alice, org.id, { type: 'svc.graph.graphdb' });
  await command(app, alice, small.id, 'mutate_graph', {
    mutations: Array.from({ length: 40 }, (_, i) => node(`q${i}`, 'item')),
  });
  const some = await command(app, alice, small.id, 'query_graph', { query: { start: { label: 'item' } } });
  t.equal(some.nodes.length, 40);
  t.equal(some.truncated, false);
  // A star: 60 edges from a hub; the kept edges are those between kept nodes, 50 at most.
  await command(app, alice, big.id, 'mutate_graph', {
    mutations: [node('hub', 'hub'), ...Array.from({ length: 39 }, (_, i) => edge(`s${i}`, 'hub', `p${i}`))],
  });
  await command(app, alice, big.id, 'mutate_graph', {
    mutations: Array.from({ length: 21 }, (_, i) => edge(`s${39 + i}`, 'hub', `p${39 + i}`)),
  });
  const star = await command(app, alice, big.id, 'query_graph', {
    query: { start: { ids: ['hub'] }, steps: [{ direction: 'out' }] },
  });
  t.equal(star.truncated, true);
  t.ok(star.nodes.length <= 50 && star.edges.length <= 50);
  const kept = new Set(star.nodes.map((n: { id: string }) => n.id));
  t.ok(
    star.edges.every((e: { source: string; target: string }) => kept.has(e.source) && kept.has(e.target)),
    'no edge to a dropped node',
  );
});

t.test('each revision is its own graph; access and entitlement are checked', async (t) => {
  const second = await createRevision(app, alice, org.id, blob.id);
  const empty = await command(app, alice, second.id, 'query_graph', { query: { start: { label: 'person' } } });
  t.same(empty.nodes, [], 'a new revision starts empty');
  t.equal((await post(revision.id, 'query_graph', { query: { start: { label: 'person' } } }, stranger)).status, 404);
  t.equal((await post(revision.id, 'create_session', {})).body.error, 'unknown_command');
  await setOverride(app, 'graphdb.enabled', 'org', org.id, false);
  const off = await post(revision.id, 'query_graph', { query: { start: { label: 'person' } } });
  t.equal(off.status, 400);
  t.same(off.body.limit, { id: 'graphdb.enabled', value: false });
  await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'graphdb.enabled' AND target_type = 'org'`);
  t.equal(
    (await post(revision.id, 'query_graph', { query: { start: { label: 'person' } } })).status,
    200,
    'back on, nothing lost',
  );
});
