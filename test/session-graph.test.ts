import t from 'tap';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import {
  graphCommandClient,
  ids,
  insertEdges,
  insertNodes,
  insertSession,
  sameRefusal,
  sameSuccess,
  type GraphCommandClient,
} from './helpers/session-graph.ts';

const { app, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const org = await createOrg(app, alice);
// Alice's public workflow blob (Bob may read, not write), her private one, and a graph blob.
const { revision } = await createBlob(app, alice, org.id, { visibility: 'public' });
const { revision: privateRevision } = await createBlob(app, alice, org.id);
const { revision: graphRevision } = await createBlob(app, alice, org.id, { type: 'svc.graph.graphdb' });

const owner: GraphCommandClient = await graphCommandClient(t, app, alice, revision.id);
const reader: GraphCommandClient = await graphCommandClient(t, app, bob, revision.id);

let sessionCount = 0;
/** A fresh session of the public revision, named `g-<n>` so calls can use the alias too. */
async function session(revisionId: string = revision.id): Promise<{ id: string; alias: string }> {
  sessionCount += 1;
  const alias = `g-${sessionCount}`;
  return { id: await insertSession(db, revisionId, alias), alias };
}

async function events(sessionId: string): Promise<Array<Record<string, unknown>>> {
  const { rows } = await db.query<{ attributes: Record<string, unknown> }>(
    `SELECT attributes FROM session_events WHERE session_id = $1::uuid AND kind = 'graph.mutated' ORDER BY id`,
    [sessionId],
  );
  return rows.map((row) => row.attributes);
}

const node = (id: string, label = 'N', properties?: Record<string, unknown>) => ({
  op: 'upsert_node',
  id,
  label,
  ...(properties ? { properties } : {}),
});
const edge = (id: string, source: string, target: string, label = 'E', properties?: Record<string, unknown>) => ({
  op: 'upsert_edge',
  id,
  label,
  source,
  target,
  ...(properties ? { properties } : {}),
});
const del = (id: string) => ({ op: 'delete', id });

/** Lists every element of a session through REST, following cursors. */
async function allElements(sessionId: string): Promise<Array<Record<string, any>>> {
  const out: Array<Record<string, any>> = [];
  let cursor: string | undefined;
  do {
    const res = await owner.rest('list_session_graph_elements', {
      session_id: sessionId,
      limit: 200,
      ...(cursor ? { cursor } : {}),
    });
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    out.push(...res.body.elements);
    cursor = res.body.cursor ?? undefined;
  } while (cursor);
  return out;
}

t.test('mutate_session_graph on both transports: elements, deleted and one event per call', async (t) => {
  const s = await session();
  const mutations = [
    node('a', 'Person', { name: 'Ada' }),
    node('b', 'Person'),
    edge('ab', 'a', 'b', 'knows', { since: 1843 }),
  ];
  const answers = await owner.both('mutate_session_graph', { session_id: s.alias, mutations });
  const fields = sameSuccess(t, answers);
  const expected = {
    elements: [
      { id: 'a', kind: 'node', label: 'Person', properties: { name: 'Ada' } },
      { id: 'b', kind: 'node', label: 'Person', properties: {} },
      { id: 'ab', kind: 'edge', label: 'knows', source: 'a', target: 'b', properties: { since: 1843 } },
    ],
    deleted: [],
  };
  t.same(fields, expected);
  t.same(answers.rpc.result, expected, 'the second call (JSON-RPC) upserts the same elements again');
  t.same(await events(s.id), [
    { mutations: 3, nodes_upserted: 2, edges_upserted: 1, elements_deleted: 0 },
    { mutations: 3, nodes_upserted: 2, edges_upserted: 1, elements_deleted: 0 },
  ]);
  t.same(
    (await allElements(s.id)).map((e) => e.id),
    ['a', 'b', 'ab'],
  );
});

t.test('upserts replace whole, keep their place, and never change kind', async (t) => {
  const s = await session();
  await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [node('a', 'N', { x: 1, y: 2 }), node('b'), edge('e', 'a', 'b')],
  });
  const res = await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [node('a', 'M', { y: 3 }), edge('e', 'b', 'a', 'F')],
  });
  t.equal(res.status, 200);
  t.same(res.body.elements, [
    { id: 'a', kind: 'node', label: 'M', properties: { y: 3 } },
    { id: 'e', kind: 'edge', label: 'F', source: 'b', target: 'a', properties: {} },
  ]);
  // Omitted properties replace with {}; the listing keeps creation order.
  await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [node('a', 'M')] });
  t.same(
    (await allElements(s.id)).map((e) => [e.id, e.label, e.properties]),
    [
      ['a', 'M', {}],
      ['b', 'N', {}],
      ['e', 'F', {}],
    ],
  );

  const asEdge = await owner.both('mutate_session_graph', { session_id: s.id, mutations: [edge('a', 'a', 'b')] });
  sameRefusal(t, asEdge, 409, 'conflict');
  t.match(asEdge.rest.body.message, /mutations\[0\].*cannot change kind/);
  sameRefusal(
    t,
    await owner.both('mutate_session_graph', { session_id: s.id, mutations: [node('e')] }),
    409,
    'conflict',
  );
});

t.test('edges need nodes at both ends: in the graph, or earlier in the call', async (t) => {
  const s = await session();
  const missing = await owner.both('mutate_session_graph', {
    session_id: s.id,
    mutations: [node('a'), edge('e', 'a', 'zz')],
  });
  sameRefusal(t, missing, 409, 'conflict');
  t.match(missing.rest.body.message, /mutations\[1\]: edge "e": target node "zz" does not exist/);
  const later = await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [edge('e', 'a', 'b'), node('a'), node('b')],
  });
  t.equal(later.status, 409, 'a node upserted after the edge is too late');
  const ok = await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [node('a'), node('b'), edge('e', 'a', 'b')],
  });
  t.equal(ok.status, 200);
  const onEdge = await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [edge('f', 'e', 'a')] });
  t.equal(onEdge.status, 409);
  t.match(onEdge.body.message, /source "e" is an edge, not a node/);
  // A node deleted earlier in the call is gone for later mutations.
  const gone = await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [del('b'), edge('g', 'a', 'b')],
  });
  t.equal(gone.status, 409);
  t.same(
    (await allElements(s.id)).map((e) => e.id),
    ['a', 'b', 'e'],
    'nothing of the refused calls remains',
  );
});

t.test('delete: a node takes its edges along; an absent id is a no-op', async (t) => {
  const s = await session();
  await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [
      node('a'),
      node('b'),
      node('c'),
      edge('ab', 'a', 'b'),
      edge('ca', 'c', 'a'),
      edge('bc', 'b', 'c'),
      edge('aa', 'a', 'a'),
    ],
  });
  const res = await owner.both('mutate_session_graph', {
    session_id: s.id,
    mutations: [del('a'), del('nothing'), node('t'), del('t')],
  });
  const fields = sameSuccess(t, res);
  t.same(fields.elements, []);
  t.same([...fields.deleted].sort(), ['a', 'aa', 'ab', 'ca', 't']);
  t.same(res.rpc.result, { elements: [], deleted: ['t'] }, 'the second call (JSON-RPC) found only t to delete');
  t.same(
    (await allElements(s.id)).map((e) => e.id),
    ['b', 'c', 'bc'],
  );
  t.same((await events(s.id)).at(-2), { mutations: 4, nodes_upserted: 1, edges_upserted: 0, elements_deleted: 5 });
  // Deleted, then upserted again in one call: present, not deleted.
  const back = await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [del('bc'), edge('bc', 'c', 'b')],
  });
  t.same(back.body, {
    status: 'success',
    elements: [{ id: 'bc', kind: 'edge', label: 'E', source: 'c', target: 'b', properties: {} }],
    deleted: [],
  });
});

t.test('ceilings: exact limit objects, refused before anything is written', async (t) => {
  const s = await session();
  const forty = ids('n', 40).map((id) => node(id));
  const tooMany = await owner.both('mutate_session_graph', {
    session_id: s.id,
    mutations: [...forty, node('one-more')],
  });
  sameRefusal(t, tooMany, 400, 'graph_mutation_too_large', { id: 'workflow.graph_mutations_per_call', value: 40 });
  t.same(await allElements(s.id), []);
  t.same(await events(s.id), []);
  t.equal(
    (await owner.rest('mutate_session_graph', { session_id: s.id, mutations: forty })).status,
    200,
    'exactly 40 pass',
  );

  // The element's serialized record, {id, kind, label, properties}, measured in UTF-8 bytes.
  const sized = (bytes: number, id = 'big') => {
    const base = Buffer.byteLength(JSON.stringify({ id, kind: 'node', label: 'L', properties: { x: '' } }));
    return node(id, 'L', { x: 'a'.repeat(bytes - base) });
  };
  t.equal(
    Buffer.byteLength(JSON.stringify({ id: 'big', kind: 'node', label: 'L', properties: sized(65_537).properties })),
    65_537,
  );
  const big = await owner.both('mutate_session_graph', { session_id: s.id, mutations: [node('first'), sized(65_537)] });
  sameRefusal(t, big, 400, 'graph_element_too_large', { id: 'workflow.graph_element_bytes', value: 65_536 });
  t.match(big.rest.body.message, /mutations\[1\]: element "big" is 65537 bytes/);
  t.equal(
    (await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [sized(65_536)] })).status,
    200,
    'exactly 65536 bytes pass',
  );
  // Bytes, not characters: 2-byte characters pass the character count but not the byte count.
  const wide = node('wide', 'L', { x: 'é'.repeat(33_000) });
  const refused = await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [wide] });
  t.equal(refused.status, 400);
  t.equal(refused.body.error, 'graph_element_too_large');
  // Edges are measured with their endpoints.
  const edgeBase = Buffer.byteLength(
    JSON.stringify({ id: 'fat', kind: 'edge', label: 'E', source: 'n0', target: 'n1', properties: { x: '' } }),
  );
  const fat = (bytes: number) => edge('fat', 'n0', 'n1', 'E', { x: 'b'.repeat(bytes - edgeBase) });
  t.equal(
    (await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [fat(65_537)] })).body.error,
    'graph_element_too_large',
  );
  t.equal((await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [fat(65_536)] })).status, 200);
  t.notOk((await allElements(s.id)).some((e) => e.id === 'first' || e.id === 'wide'));
});

t.test('all or nothing: a refusal late in a call undoes the earlier mutations', async (t) => {
  const s = await session();
  await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [node('keep', 'N', { v: 1 })] });
  const before = await events(s.id);
  const res = await owner.both('mutate_session_graph', {
    session_id: s.id,
    mutations: [
      node('p'),
      node('q'),
      edge('pq', 'p', 'q'),
      node('keep', 'N', { v: 2 }),
      del('keep'),
      edge('bad', 'p', 'missing'),
    ],
  });
  sameRefusal(t, res, 409, 'conflict');
  t.same(
    (await allElements(s.id)).map((e) => [e.id, e.properties]),
    [['keep', { v: 1 }]],
  );
  t.same(await events(s.id), before, 'no event for a refused call');
});

t.test('sessions and access', async (t) => {
  const s = await session();
  await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [node('a')] });
  const query = { start: { ids: ['a'] } };
  for (const [command, params] of [
    ['mutate_session_graph', { mutations: [node('x')] }],
    ['list_session_graph_elements', {}],
    ['list_session_graph_neighbors', { element_id: 'a' }],
    ['query_session_graph', { query }],
  ] as const) {
    sameRefusal(t, await owner.both(command, { session_id: 'no-such-session', ...params }), 404, 'not_found');
    // A session of another revision is not found through this one.
    const elsewhere = await session(privateRevision.id);
    sameRefusal(t, await owner.both(command, { session_id: elsewhere.id, ...params }), 404, 'not_found');
    // Bob cannot read the private revision at all.
    const stranger = await graphCommandClient(t, app, bob, privateRevision.id);
    sameRefusal(t, await stranger.both(command, { session_id: elsewhere.id, ...params }), 404, 'not_found');
    // Graph blobs have their own commands.
    const graph = await graphCommandClient(t, app, alice, graphRevision.id);
    sameRefusal(
      t,
      {
        rest: await graph.rest(command, { session_id: s.id, ...params }),
        rpc: await graph.rpc(command, { session_id: s.id, ...params }),
      },
      404,
      'unknown_command',
    );
  }
  // Bob reads the public revision's graph but may not change it.
  sameRefusal(
    t,
    await reader.both('mutate_session_graph', { session_id: s.id, mutations: [node('x')] }),
    403,
    'forbidden',
  );
  t.equal(sameSuccess(t, await reader.both('list_session_graph_elements', { session_id: s.id })).elements.length, 1);
  t.same(sameSuccess(t, await reader.both('query_session_graph', { session_id: s.id, query })).ends, ['a']);
  // A session being deleted takes no more mutations; it stays readable until it is removed.
  const doomed = await session();
  await owner.rest('mutate_session_graph', { session_id: doomed.id, mutations: [node('a')] });
  await db.query(`UPDATE sessions SET status = 'deleting' WHERE id = $1::uuid`, [doomed.id]);
  const conflict = await owner.both('mutate_session_graph', { session_id: doomed.id, mutations: [node('b')] });
  sameRefusal(t, conflict, 409, 'conflict');
  t.same(
    (await allElements(doomed.id)).map((e) => e.id),
    ['a'],
  );
});

t.test('invalid params: 400 invalid_request_body / -32602', async (t) => {
  const s = await session();
  const bad: unknown[] = [
    [],
    [{ op: 'upsert_node', id: 'a' }],
    [{ op: 'upsert_node', id: '', label: 'N' }],
    [{ op: 'upsert_node', id: 'has space', label: 'N' }],
    [{ op: 'upsert_node', id: 'x'.repeat(129), label: 'N' }],
    [{ op: 'upsert_node', id: 'a', label: 'L'.repeat(65) }],
    [{ op: 'upsert_node', id: 'a', label: 'N', properties: [1] }],
    [{ op: 'upsert_node', id: 'a', label: 'N', properties: 'x' }],
    [{ op: 'upsert_node', id: 'a', label: 'N', properties: { k: 'nul\u0000' } }],
    [{ op: 'upsert_node', id: 'a', label: 'N', source: 'b' }],
    [{ op: 'upsert_edge', id: 'e', label: 'E', source: 'a' }],
    [{ op: 'delete', id: 'a', label: 'N' }],
    [{ op: 'merge', id: 'a' }],
    [{ id: 'a' }],
    'a',
  ];
  for (const mutations of bad) {
    sameRefusal(
      t,
      await owner.both('mutate_session_graph', { session_id: s.id, mutations }),
      400,
      'invalid_request_body',
    );
  }
  t.equal(
    (await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [node('x'.repeat(128), 'L'.repeat(64))] }))
      .status,
    200,
    'the longest id and label pass',
  );
  sameRefusal(
    t,
    await owner.both('mutate_session_graph', { session_id: s.id, mutations: [node('a')], extra: 1 }),
    400,
    'invalid_request_body',
  );
  sameRefusal(
    t,
    await owner.both('list_session_graph_elements', { session_id: s.id, kind: 'vertex' }),
    400,
    'invalid_request_body',
  );
  sameRefusal(
    t,
    await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'a', direction: 'up' }),
    400,
    'invalid_request_body',
  );
  sameRefusal(
    t,
    await owner.both('query_session_graph', {
      session_id: s.id,
      query: { start: { ids: ['a'] }, steps: [{ direction: 'out', min: 2, max: 1 }] },
    }),
    400,
    'invalid_request_body',
  );
  sameRefusal(t, await owner.both('query_session_graph', { session_id: s.id }), 400, 'invalid_request_body');
});

t.test('list_session_graph_elements: filters, order, cursors and limits', async (t) => {
  const s = await session();
  await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [
      node('p1', 'Person'),
      node('c1', 'City'),
      node('p2', 'Person'),
      edge('l1', 'p1', 'c1', 'lives'),
      edge('k1', 'p1', 'p2', 'knows'),
      edge('l2', 'p2', 'c1', 'lives'),
    ],
  });
  const list = async (params: Record<string, unknown>) =>
    sameSuccess(t, await owner.both('list_session_graph_elements', { session_id: s.id, ...params }));
  t.same(
    (await list({})).elements.map((e: any) => e.id),
    ['p1', 'c1', 'p2', 'l1', 'k1', 'l2'],
  );
  t.same(
    (await list({ kind: 'node' })).elements.map((e: any) => e.id),
    ['p1', 'c1', 'p2'],
  );
  t.same(
    (await list({ kind: 'edge' })).elements.map((e: any) => e.id),
    ['l1', 'k1', 'l2'],
  );
  t.same(
    (await list({ label: 'lives' })).elements.map((e: any) => e.id),
    ['l1', 'l2'],
  );
  t.same((await list({ kind: 'node', label: 'lives' })).elements, []);
  t.same((await list({ kind: 'edge', label: 'lives' })).elements[0], {
    id: 'l1',
    kind: 'edge',
    label: 'lives',
    source: 'p1',
    target: 'c1',
    properties: {},
  });
  t.equal((await list({})).cursor, null, 'one page: exhausted at once');

  // Pages, with the cursor passed from one transport to the other.
  const first = await owner.rest('list_session_graph_elements', { session_id: s.id, kind: 'node', limit: 2 });
  t.same(
    first.body.elements.map((e: any) => e.id),
    ['p1', 'c1'],
  );
  t.type(first.body.cursor, 'string');
  const second = await owner.rpc('list_session_graph_elements', {
    session_id: s.id,
    kind: 'node',
    limit: 2,
    cursor: first.body.cursor,
  });
  t.same(second.result, { elements: [{ id: 'p2', kind: 'node', label: 'Person', properties: {} }], cursor: null });

  // Cursor rules.
  const cursor: string = first.body.cursor;
  sameRefusal(
    t,
    await owner.both('list_session_graph_elements', { session_id: s.id, kind: 'node', cursor: null }),
    400,
    'invalid_request_body',
  );
  const flipped = cursor.slice(0, 3) + (cursor[3] === 'A' ? 'B' : 'A') + cursor.slice(4);
  sameRefusal(
    t,
    await owner.both('list_session_graph_elements', { session_id: s.id, kind: 'node', cursor: flipped }),
    400,
    'invalid_cursor',
  );
  const forged = Buffer.from(JSON.stringify(0)).toString('base64url') + cursor.slice(cursor.indexOf('.'));
  sameRefusal(
    t,
    await owner.both('list_session_graph_elements', { session_id: s.id, kind: 'node', cursor: forged }),
    400,
    'invalid_cursor',
  );
  sameRefusal(
    t,
    await owner.both('list_session_graph_elements', { session_id: s.id, kind: 'node', cursor: 'garbage' }),
    400,
    'invalid_cursor',
  );
  // Transplanted: other filters, another session, another listing.
  sameRefusal(t, await owner.both('list_session_graph_elements', { session_id: s.id, cursor }), 400, 'invalid_cursor');
  sameRefusal(
    t,
    await owner.both('list_session_graph_elements', { session_id: s.id, kind: 'node', label: 'Person', cursor }),
    400,
    'invalid_cursor',
  );
  const other = await session();
  sameRefusal(
    t,
    await owner.both('list_session_graph_elements', { session_id: other.id, kind: 'node', cursor }),
    400,
    'invalid_cursor',
  );
  sameRefusal(
    t,
    await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'p1', cursor }),
    400,
    'invalid_cursor',
  );
  const items = await owner.rest('list_session_thread_items', { session_id: s.id, cursor });
  t.equal(items.body.error, 'invalid_cursor', 'nor does another command take it');
  // The alias and the id name the same session, so the cursor resumes either way.
  t.same(
    (
      await owner.rest('list_session_graph_elements', { session_id: s.alias, kind: 'node', limit: 2, cursor })
    ).body.elements.map((e: any) => e.id),
    ['p2'],
  );

  // Limits: 1..200, refused outside, never clamped.
  for (const limit of [0, 201, -1, 1.5, '0', 'five', null, true, {}]) {
    const answers = await owner.both('list_session_graph_elements', { session_id: s.id, limit });
    t.comment(`limit ${JSON.stringify(limit)}`);
    sameRefusal(t, answers, 400, 'invalid_limit');
  }
  t.equal((await list({ limit: 200 })).elements.length, 6);
  t.equal((await list({ limit: 1 })).elements.length, 1);
});

t.test('pagination to exhaustion with concurrent inserts: nothing twice, nothing skipped', async (t) => {
  const s = await session();
  await insertNodes(
    db,
    s.id,
    ids('old', 30).map((id) => [id, 'N'] as const),
  );
  const seen: string[] = [];
  let cursor: string | undefined;
  let round = 0;
  let pages = 0;
  do {
    round += 1;
    // A page read races a write that adds two nodes and rewrites one already seen (and one not yet seen).
    const [page, write] = await Promise.all([
      (pages % 2 === 0 ? owner.rest : owner.rpc)('list_session_graph_elements', {
        session_id: s.id,
        limit: 7,
        ...(cursor ? { cursor } : {}),
      }),
      owner.rest('mutate_session_graph', {
        session_id: s.id,
        mutations: [
          node(`new${round}a`),
          node(`new${round}b`),
          node('old0', 'N', { round }),
          node('old29', 'N', { round }),
        ],
      }),
    ]);
    t.equal(write.status, 200);
    const body = 'result' in page ? page.result : page.body;
    seen.push(...body.elements.map((e: any) => e.id));
    cursor = body.cursor ?? undefined;
    pages += 1;
    if (round > 50) throw new Error('the walk did not end');
  } while (cursor);
  t.equal(new Set(seen).size, seen.length, 'no element twice');
  for (const id of ids('old', 30)) t.ok(seen.includes(id), `${id} seen`);
  // Every insert committed before the last page was read lies past the position of every earlier page.
  const all = (await allElements(s.id)).map((e) => e.id);
  const inserted = all.filter((id) => id.startsWith('new'));
  t.ok(inserted.length >= 2 * (round - 1), 'the writes happened');
  t.same(seen, all.slice(0, seen.length), 'the walk read the listing in order');
  t.ok(seen.length >= 30 + 2 * (round - 1), 'inserts before the last page were seen');
});

t.test('list_session_graph_neighbors: directions, labels, self-loops, paging', async (t) => {
  const s = await session();
  await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [
      node('h', 'Hub'),
      node('a', 'Person', { n: 1 }),
      node('b', 'Person'),
      node('c', 'Person'),
      edge('ha', 'h', 'a', 'knows'),
      edge('hb', 'h', 'b', 'likes'),
      edge('ch', 'c', 'h', 'knows'),
      edge('hh', 'h', 'h', 'self'),
      edge('ab', 'a', 'b', 'knows'),
    ],
  });
  const neighbors = async (params: Record<string, unknown>) => {
    const fields = sameSuccess(
      t,
      await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'h', ...params }),
    );
    return fields.neighbors.map((n: any) => `${n.direction}:${n.edge.id}:${n.node.id}`);
  };
  t.same(await neighbors({}), ['out:ha:a', 'out:hb:b', 'in:ch:c', 'out:hh:h'], 'both by default, self-loop once');
  t.same(await neighbors({ direction: 'out' }), ['out:ha:a', 'out:hb:b', 'out:hh:h']);
  t.same(await neighbors({ direction: 'in' }), ['in:ch:c', 'in:hh:h']);
  t.same(await neighbors({ direction: 'both', edge_label: 'knows' }), ['out:ha:a', 'in:ch:c']);
  t.same(await neighbors({ direction: 'in', edge_label: 'likes' }), []);
  const full = sameSuccess(
    t,
    await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'h', direction: 'out', limit: 1 }),
  );
  t.same(full.neighbors, [
    {
      direction: 'out',
      edge: { id: 'ha', kind: 'edge', label: 'knows', source: 'h', target: 'a', properties: {} },
      node: { id: 'a', kind: 'node', label: 'Person', properties: { n: 1 } },
    },
  ]);

  // Paging one at a time to exhaustion, alternating transports.
  const walked: string[] = [];
  let cursor: string | undefined;
  let turn = 0;
  do {
    const params = { session_id: s.id, element_id: 'h', limit: 1, ...(cursor ? { cursor } : {}) };
    const body =
      turn++ % 2 === 0
        ? (await owner.rest('list_session_graph_neighbors', params)).body
        : (await owner.rpc('list_session_graph_neighbors', params)).result;
    walked.push(...body.neighbors.map((n: any) => n.edge.id));
    cursor = body.cursor ?? undefined;
  } while (cursor);
  t.same(walked, ['ha', 'hb', 'ch', 'hh']);

  // Cursors are bound to the node, direction and label.
  const page = (await owner.rest('list_session_graph_neighbors', { session_id: s.id, element_id: 'h', limit: 1 })).body;
  sameRefusal(
    t,
    await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'a', cursor: page.cursor }),
    400,
    'invalid_cursor',
  );
  sameRefusal(
    t,
    await owner.both('list_session_graph_neighbors', {
      session_id: s.id,
      element_id: 'h',
      direction: 'out',
      cursor: page.cursor,
    }),
    400,
    'invalid_cursor',
  );
  sameRefusal(
    t,
    await owner.both('list_session_graph_neighbors', {
      session_id: s.id,
      element_id: 'h',
      edge_label: 'knows',
      cursor: page.cursor,
    }),
    400,
    'invalid_cursor',
  );
  sameRefusal(
    t,
    await owner.both('list_session_graph_elements', { session_id: s.id, cursor: page.cursor }),
    400,
    'invalid_cursor',
  );
  t.equal(
    (
      await owner.rest('list_session_graph_neighbors', {
        session_id: s.id,
        element_id: 'h',
        direction: 'both',
        cursor: page.cursor,
      })
    ).status,
    200,
    'both spelled out is the default',
  );
  sameRefusal(
    t,
    await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'h', limit: 201 }),
    400,
    'invalid_limit',
  );

  // Only nodes have neighbours.
  const missing = await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'zz' });
  sameRefusal(t, missing, 404, 'not_found');
  sameRefusal(
    t,
    await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'ha' }),
    404,
    'not_found',
  );
  // A node deleted between pages ends the walk with not_found.
  await owner.rest('mutate_session_graph', { session_id: s.id, mutations: [del('h')] });
  sameRefusal(
    t,
    await owner.both('list_session_graph_neighbors', { session_id: s.id, element_id: 'h', cursor: page.cursor }),
    404,
    'not_found',
  );
});

t.test('query_session_graph on both transports', async (t) => {
  const s = await session();
  await owner.rest('mutate_session_graph', {
    session_id: s.id,
    mutations: [
      node('a', 'Person', { name: 'a' }),
      node('b', 'Person', { name: 'b' }),
      node('c', 'Person', { name: 'c' }),
      node('paris', 'City'),
      edge('ab', 'a', 'b', 'knows'),
      edge('bc', 'b', 'c', 'knows'),
      edge('ca', 'c', 'a', 'knows'),
      edge('bp', 'b', 'paris', 'lives'),
    ],
  });
  const query = {
    start: { label: 'Person', where: { name: 'a' } },
    steps: [
      { direction: 'out', edge_label: 'knows', max: 4 },
      { direction: 'out', node_label: 'City' },
    ],
  };
  const fields = sameSuccess(t, await owner.both('query_session_graph', { session_id: s.alias, query }));
  t.same(fields, {
    nodes: [
      { id: 'a', kind: 'node', label: 'Person', properties: { name: 'a' } },
      { id: 'b', kind: 'node', label: 'Person', properties: { name: 'b' } },
      { id: 'c', kind: 'node', label: 'Person', properties: { name: 'c' } },
      { id: 'paris', kind: 'node', label: 'City', properties: {} },
    ],
    // a->b->paris, and a->b->c->a->b->paris (four knows hops): both paths end at paris.
    edges: [
      { id: 'ab', kind: 'edge', label: 'knows', source: 'a', target: 'b', properties: {} },
      { id: 'bc', kind: 'edge', label: 'knows', source: 'b', target: 'c', properties: {} },
      { id: 'ca', kind: 'edge', label: 'knows', source: 'c', target: 'a', properties: {} },
      { id: 'bp', kind: 'edge', label: 'lives', source: 'b', target: 'paris', properties: {} },
    ],
    ends: ['paris'],
  });
  t.same(fields, (await owner.rpc('query_session_graph', { session_id: s.id, query })).result);
  t.same(
    sameSuccess(t, await owner.both('query_session_graph', { session_id: s.id, query: { start: { ids: ['nope'] } } })),
    { nodes: [], edges: [], ends: [] },
  );
});

t.test('query caps on both transports: each refuses the whole query with its limit', async (t) => {
  const refusal = (id: string, value: number) => ({ id, value });

  // Depth 11 is refused before running: even where the start matches nothing.
  const empty = await session();
  const eleven = {
    start: { ids: ['nothing'] },
    steps: [
      { direction: 'out', max: 5 },
      { direction: 'both', min: 0, max: 6 },
    ],
  };
  sameRefusal(
    t,
    await owner.both('query_session_graph', { session_id: empty.id, query: eleven }),
    400,
    'graph_traversal_limit_exceeded',
    refusal('workflow.graph_query_depth', 10),
  );
  const ten = {
    start: { ids: ['nothing'] },
    steps: [
      { direction: 'out', max: 4 },
      { direction: 'both', min: 0, max: 6 },
    ],
  };
  t.same(sameSuccess(t, await owner.both('query_session_graph', { session_id: empty.id, query: ten })), {
    nodes: [],
    edges: [],
    ends: [],
  });

  // A star of 1001 edges trips fanout on its one hop.
  const star = await session();
  await insertNodes(db, star.id, [['hub', 'H'], ...ids('s', 1001).map((id) => [id, 'S'] as const)]);
  await insertEdges(
    db,
    star.id,
    ids('s', 1001).map((id, i) => [`h${i}`, 'e', 'hub', id] as const),
  );
  sameRefusal(
    t,
    await owner.both('query_session_graph', {
      session_id: star.id,
      query: { start: { ids: ['hub'] }, steps: [{ direction: 'out' }] },
    }),
    400,
    'graph_traversal_limit_exceeded',
    refusal('workflow.graph_query_fanout', 1000),
  );
  // Fewer leaves pass: the same hop limited to a label of 10 of them.
  await db.query(`UPDATE graph_elements SET label = 'few' WHERE session_id = $1::uuid AND id = ANY($2::text[])`, [
    star.id,
    ids('h', 10),
  ]);
  t.equal(
    sameSuccess(
      t,
      await owner.both('query_session_graph', {
        session_id: star.id,
        query: { start: { ids: ['hub'] }, steps: [{ direction: 'out', edge_label: 'few' }] },
      }),
    ).ends.length,
    10,
  );

  // A wide two-hop graph (root -> 600 -> 600) trips results: 1201 nodes on matched paths.
  const wide = await session();
  await insertNodes(db, wide.id, [
    ['root', 'R'],
    ...ids('a', 600).map((id) => [id, 'A'] as const),
    ...ids('b', 600).map((id) => [id, 'B'] as const),
  ]);
  await insertEdges(db, wide.id, [
    ...ids('a', 600).map((id, i) => [`ra${i}`, 'e', 'root', id] as const),
    ...ids('a', 600).map((id, i) => [`ab${i}`, 'e', id, `b${i}`] as const),
  ]);
  sameRefusal(
    t,
    await owner.both('query_session_graph', {
      session_id: wide.id,
      query: { start: { ids: ['root'] }, steps: [{ direction: 'out' }, { direction: 'out' }] },
    }),
    400,
    'graph_traversal_limit_exceeded',
    refusal('workflow.graph_query_results', 1000),
  );
  // And a start set of 1001 nodes.
  sameRefusal(
    t,
    await owner.both('query_session_graph', { session_id: star.id, query: { start: { label: 'S' } } }),
    400,
    'graph_traversal_limit_exceeded',
    refusal('workflow.graph_query_results', 1000),
  );

  // root -> 900 -> 900 -> 900: every hop is within fanout and results, the third passes 5000 fetched elements.
  const layered = await session();
  const layer = (p: string) => ids(p, 900).map((id) => [id, p.toUpperCase()] as const);
  await insertNodes(db, layered.id, [['root', 'R'], ...layer('a'), ...layer('b'), ...layer('c')]);
  await insertEdges(db, layered.id, [
    ...ids('a', 900).map((id, i) => [`ra${i}`, 'e', 'root', id] as const),
    ...ids('a', 900).map((id, i) => [`ab${i}`, 'e', id, `b${i}`] as const),
    ...ids('b', 900).map((id, i) => [`bc${i}`, 'e', id, `c${i}`] as const),
  ]);
  const threeHops = { start: { ids: ['root'] }, steps: [{ direction: 'out', min: 3, max: 3, where: { never: true } }] };
  sameRefusal(
    t,
    await owner.both('query_session_graph', { session_id: layered.id, query: threeHops }),
    400,
    'graph_traversal_limit_exceeded',
    refusal('workflow.graph_query_elements', 5000),
  );
  const twoHops = { start: { ids: ['root'] }, steps: [{ direction: 'out', min: 2, max: 2, where: { never: true } }] };
  t.same(sameSuccess(t, await owner.both('query_session_graph', { session_id: layered.id, query: twoHops })), {
    nodes: [],
    edges: [],
    ends: [],
  });
});
