import t, { type Test } from 'tap';
import { graphQueryCaps, runGraphQuery, sessionGraphStore, type GraphQueryCaps } from '../../shared/graph/query.ts';
import { graphQuerySchema, type GraphQuery } from '../../shared/graph/query-schema.ts';
import { createDb, type Db, type Queryable } from '../../shared/db/db.ts';
import { isServiceError } from '../../shared/errors.ts';
import { resolveLimit } from '../../shared/limits/index.ts';
import { parseInput } from '../../shared/validate.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { ids, insertEdges, insertNodes, insertSession, insertSessionChain } from '../helpers/session-graph.ts';

const db: Db = createDb({ connectionString: await createTestDatabase(t), max: 4 });
t.teardown(() => db.close());
const chain = await insertSessionChain(db);

/** The catalog's caps, as a session with no overrides has them. */
const DEFAULT_CAPS: GraphQueryCaps = {
  depth: resolveLimit('workflow.graph_query_depth', {}),
  fanout: resolveLimit('workflow.graph_query_fanout', {}),
  results: resolveLimit('workflow.graph_query_results', {}),
  elements: resolveLimit('workflow.graph_query_elements', {}),
};

/** A Queryable that records the statements (and their values) sent through it. */
function counting(q: Queryable): Queryable & { statements: string[]; sent: Array<[string, unknown[] | undefined]> } {
  const statements: string[] = [];
  const sent: Array<[string, unknown[] | undefined]> = [];
  return {
    statements,
    sent,
    query(text: string, values?: unknown[]) {
      statements.push(text);
      sent.push([text, values]);
      return q.query(text, values);
    },
  } as Queryable & { statements: string[]; sent: Array<[string, unknown[] | undefined]> };
}

async function newSession(): Promise<string> {
  return insertSession(db, chain.revisionId);
}

async function run(sessionId: string, query: unknown, caps: GraphQueryCaps = DEFAULT_CAPS, q: Queryable = db) {
  return runGraphQuery(
    q,
    sessionGraphStore(sessionId),
    parseInput(graphQuerySchema, query, 'query') as GraphQuery,
    caps,
  );
}

let lastMessage = '';

/** The refusal a query answers, or a failure when it answers a graph. */
async function refusal(
  t: Test,
  sessionId: string,
  query: unknown,
  caps: GraphQueryCaps = DEFAULT_CAPS,
  q: Queryable = db,
) {
  try {
    await run(sessionId, query, caps, q);
  } catch (error) {
    if (isServiceError(error)) {
      t.comment(error.message);
      lastMessage = error.message;
      return { code: error.code, limit: error.extras.limit };
    }
    throw error;
  }
  t.fail('the query was not refused');
  return undefined;
}

const idsOf = (result: { nodes: Array<{ id: string }>; edges: Array<{ id: string }>; ends: string[] }) => ({
  nodes: result.nodes.map((n) => n.id),
  edges: result.edges.map((e) => e.id),
  ends: result.ends,
});

// The small graph: a knows b knows c knows a (a cycle), a likes c, b lives in paris, c in rome,
// x has a self-loop. Creation order (and so result order) is the order below.
const small = await newSession();
await insertNodes(db, small, [
  ['a', 'Person', { name: 'a', age: 30, tags: ['x', 'y'] }],
  ['b', 'Person', { name: 'b', age: 40 }],
  ['c', 'Person', { name: 'c', age: 30 }],
  ['paris', 'City', { name: 'paris' }],
  ['rome', 'City', { name: 'rome' }],
  ['x', 'Thing', {}],
]);
await insertEdges(db, small, [
  ['ab', 'knows', 'a', 'b', { since: 2020 }],
  ['bc', 'knows', 'b', 'c'],
  ['ca', 'knows', 'c', 'a'],
  ['ac', 'likes', 'a', 'c'],
  ['b-paris', 'lives', 'b', 'paris'],
  ['c-rome', 'lives', 'c', 'rome'],
  ['xx', 'self', 'x', 'x'],
]);

t.test('start only: the start set is the result; missing ids and edge ids match nothing', async (t) => {
  t.same(idsOf(await run(small, { start: { ids: ['c', 'a', 'nope', 'ab'] } })), {
    nodes: ['a', 'c'],
    edges: [],
    ends: ['a', 'c'],
  });
  t.same(idsOf(await run(small, { start: { label: 'City' }, steps: [] })), {
    nodes: ['paris', 'rome'],
    edges: [],
    ends: ['paris', 'rome'],
  });
  t.same(idsOf(await run(small, { start: { label: 'Person', where: { age: 30 } } })), {
    nodes: ['a', 'c'],
    edges: [],
    ends: ['a', 'c'],
  });
  // `where` is jsonb containment: arrays match by containment too.
  t.same(idsOf(await run(small, { start: { label: 'Person', where: { tags: ['y'] } } })).ends, ['a']);
  t.same(idsOf(await run(small, { start: { label: 'Person', where: { age: 31 } } })), {
    nodes: [],
    edges: [],
    ends: [],
  });
});

t.test('whole records come back, in creation order', async (t) => {
  const result = await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'out', edge_label: 'knows' }] });
  t.same(result, {
    nodes: [
      { id: 'a', kind: 'node', label: 'Person', properties: { name: 'a', age: 30, tags: ['x', 'y'] } },
      { id: 'b', kind: 'node', label: 'Person', properties: { name: 'b', age: 40 } },
    ],
    edges: [{ id: 'ab', kind: 'edge', label: 'knows', source: 'a', target: 'b', properties: { since: 2020 } }],
    ends: ['b'],
  });
});

t.test('directions and edge labels', async (t) => {
  t.same(idsOf(await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'out' }] })), {
    nodes: ['a', 'b', 'c'],
    edges: ['ab', 'ac'],
    ends: ['b', 'c'],
  });
  t.same(idsOf(await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'in' }] })), {
    nodes: ['a', 'c'],
    edges: ['ca'],
    ends: ['c'],
  });
  t.same(idsOf(await run(small, { start: { ids: ['b'] }, steps: [{ direction: 'both', edge_label: 'knows' }] })), {
    nodes: ['a', 'b', 'c'],
    edges: ['ab', 'bc'],
    ends: ['a', 'c'],
  });
  t.same(idsOf(await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'out', edge_label: 'likes' }] })), {
    nodes: ['a', 'c'],
    edges: ['ac'],
    ends: ['c'],
  });
  t.same(idsOf(await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'in', edge_label: 'likes' }] })), {
    nodes: [],
    edges: [],
    ends: [],
  });
});

t.test('several steps: only elements on paths that reach the end are kept', async (t) => {
  t.same(
    idsOf(
      await run(small, {
        start: { ids: ['a'] },
        steps: [
          { direction: 'out', edge_label: 'knows' },
          { direction: 'out', edge_label: 'lives' },
        ],
      }),
    ),
    { nodes: ['a', 'b', 'paris'], edges: ['ab', 'b-paris'], ends: ['paris'] },
  );
  // A hop that reaches nothing ends the walk with an empty result, whatever follows.
  t.same(idsOf(await run(small, { start: { ids: ['paris'] }, steps: [{ direction: 'out' }, { direction: 'in' }] })), {
    nodes: [],
    edges: [],
    ends: [],
  });
});

t.test('node filters apply where a step ends, not on the hops inside it', async (t) => {
  // a -> b -> paris and a -> c -> rome: b and c are Persons, yet the paths pass through them.
  t.same(
    idsOf(await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'out', node_label: 'City', max: 2 }] })),
    { nodes: ['a', 'b', 'c', 'paris', 'rome'], edges: ['ab', 'ac', 'b-paris', 'c-rome'], ends: ['paris', 'rome'] },
  );
  t.same(
    idsOf(
      await run(small, {
        start: { ids: ['a'] },
        steps: [{ direction: 'out', where: { name: 'rome' }, min: 1, max: 2 }],
      }),
    ),
    { nodes: ['a', 'c', 'rome'], edges: ['ac', 'c-rome'], ends: ['rome'] },
  );
  t.same(
    idsOf(
      await run(small, {
        start: { ids: ['a'] },
        steps: [{ direction: 'out', node_label: 'Person', where: { age: 30 } }],
      }),
    ),
    { nodes: ['a', 'c'], edges: ['ac'], ends: ['c'] },
  );
});

t.test('variable length over a cycle: walks are bounded, results are sets', async (t) => {
  // a knows b knows c knows a: 1..3 hops from a reaches b, c and a itself.
  t.same(
    idsOf(await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'out', edge_label: 'knows', max: 3 }] })),
    { nodes: ['a', 'b', 'c'], edges: ['ab', 'bc', 'ca'], ends: ['a', 'b', 'c'] },
  );
  t.same(
    idsOf(await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'out', edge_label: 'knows', min: 2 }] })),
    { nodes: ['a', 'b', 'c'], edges: ['ab', 'bc'], ends: ['c'] },
  );
  t.same(
    idsOf(
      await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'out', edge_label: 'knows', min: 3, max: 3 }] }),
    ),
    { nodes: ['a', 'b', 'c'], edges: ['ab', 'bc', 'ca'], ends: ['a'] },
  );
  // Ten hops round the cycle and both ways: terminates, nothing twice.
  const both = await run(small, {
    start: { ids: ['a'] },
    steps: [{ direction: 'both', edge_label: 'knows', max: 10 }],
  });
  t.same(idsOf(both), { nodes: ['a', 'b', 'c'], edges: ['ab', 'bc', 'ca'], ends: ['a', 'b', 'c'] });
  // A self-loop, both directions, many hops: one node, one edge.
  t.same(idsOf(await run(small, { start: { ids: ['x'] }, steps: [{ direction: 'both', min: 1, max: 5 }] })), {
    nodes: ['x'],
    edges: ['xx'],
    ends: ['x'],
  });
});

t.test('min 0 makes a step optional; its node filter still applies to the step input', async (t) => {
  t.same(
    idsOf(await run(small, { start: { ids: ['a'] }, steps: [{ direction: 'out', edge_label: 'lives', min: 0 }] })),
    { nodes: ['a'], edges: [], ends: ['a'] },
  );
  t.same(
    idsOf(
      await run(small, {
        start: { ids: ['a', 'b'] },
        steps: [{ direction: 'out', edge_label: 'lives', min: 0, node_label: 'City' }],
      }),
    ),
    { nodes: ['b', 'paris'], edges: ['b-paris'], ends: ['paris'] },
  );
  t.same(
    idsOf(
      await run(small, {
        start: { ids: ['a'] },
        steps: [
          { direction: 'out', edge_label: 'knows', min: 0, node_label: 'Person' },
          { direction: 'out', edge_label: 'lives' },
        ],
      }),
    ),
    { nodes: ['a', 'b', 'paris'], edges: ['ab', 'b-paris'], ends: ['paris'] },
  );
});

t.test('the schema: defaults, bounds and strictness', async (t) => {
  const bad = [
    { start: {} },
    { start: { ids: [] } },
    { start: { ids: ['a'], label: 'Person' } },
    { start: { ids: ['a b'] } },
    { start: { ids: ['a'] }, steps: [{}] },
    { start: { ids: ['a'] }, steps: [{ direction: 'up' }] },
    { start: { ids: ['a'] }, steps: [{ direction: 'out', min: 3, max: 2 }] },
    { start: { ids: ['a'] }, steps: [{ direction: 'out', max: 0 }] },
    { start: { ids: ['a'] }, steps: [{ direction: 'out', min: -1 }] },
    { start: { ids: ['a'] }, steps: [{ direction: 'out', min: 1.5 }] },
    { start: { ids: ['a'] }, steps: [{ direction: 'out', where: [] }] },
    { start: { ids: ['a'] }, steps: [{ direction: 'out', where: { k: 'nul\u0000' } }] },
    { start: { ids: ['a'] }, steps: [{ direction: 'out', extra: 1 }] },
    { start: { ids: ['a'] }, steps: [], extra: 1 },
  ];
  for (const query of bad)
    t.throws(
      () => parseInput(graphQuerySchema, query, 'query'),
      { code: 'invalid_request_body' },
      JSON.stringify(query),
    );
});

t.test('depth is refused before any statement runs', async (t) => {
  const q = counting(db);
  const eleven = {
    start: { ids: ['a'] },
    steps: [
      { direction: 'out', max: 4 },
      { direction: 'out', min: 0, max: 7 },
    ],
  };
  t.same(await refusal(t, small, eleven, DEFAULT_CAPS, q), {
    code: 'graph_traversal_limit_exceeded',
    limit: { id: 'workflow.graph_query_depth', value: 10 },
  });
  t.same(q.statements, []);
  t.same(
    await refusal(
      t,
      small,
      { start: { ids: ['a'] }, steps: Array.from({ length: 11 }, () => ({ direction: 'out' })) },
      DEFAULT_CAPS,
      q,
    ),
    { code: 'graph_traversal_limit_exceeded', limit: { id: 'workflow.graph_query_depth', value: 10 } },
  );
  t.same(q.statements, []);
  // Exactly ten hops may run.
  const ten = await run(small, {
    start: { ids: ['a'] },
    steps: [{ direction: 'out', edge_label: 'knows', min: 10, max: 10 }],
  });
  t.same(ten.ends, ['b'], 'ten hops round the three-cycle end at b');
});

t.test('statements are one per hop, however many elements a hop covers', async (t) => {
  // Layers of 1, 300 and 300 nodes; then a chain of 10.
  const wide = await newSession();
  await insertNodes(db, wide, [
    ['root', 'R'],
    ...ids('m', 300).map((id) => [id, 'M'] as const),
    ...ids('l', 300).map((id) => [id, 'L'] as const),
  ]);
  await insertEdges(db, wide, [
    ...ids('m', 300).map((id, i) => [`r-${i}`, 'e', 'root', id] as const),
    ...ids('m', 300).map((id, i) => [`m-${i}`, 'e', id, `l${i}`] as const),
  ]);
  const q = counting(db);
  const result = await run(wide, { start: { ids: ['root'] }, steps: [{ direction: 'out', max: 2 }] }, DEFAULT_CAPS, q);
  t.equal(result.nodes.length, 601);
  t.equal(result.edges.length, 600);
  t.equal(result.ends.length, 600);
  t.equal(q.statements.length, 4, 'start, two hops, one read of the result');

  const line = await newSession();
  await insertNodes(
    db,
    line,
    ids('n', 11).map((id) => [id, 'N'] as const),
  );
  await insertEdges(
    db,
    line,
    ids('n', 10).map((id, i) => [`e${i}`, 'next', id, `n${i + 1}`] as const),
  );
  const q2 = counting(db);
  const walked = await run(
    line,
    { start: { ids: ['n0'] }, steps: [{ direction: 'out', min: 10, max: 10 }] },
    DEFAULT_CAPS,
    q2,
  );
  t.same(walked.ends, ['n10']);
  t.equal(walked.nodes.length, 11);
  t.equal(q2.statements.length, 12, 'start, ten hops, the read');

  // A walk that runs dry stops issuing statements.
  const q3 = counting(db);
  t.same(
    idsOf(
      await run(
        line,
        { start: { ids: ['n9'] }, steps: [{ direction: 'out', max: 5 }, { direction: 'out' }] },
        DEFAULT_CAPS,
        q3,
      ),
    ),
    { nodes: [], edges: [], ends: [] },
  );
  t.equal(
    q3.statements.length,
    4,
    'start, two hops of the first step (the second finds nothing), one of the second step, no read',
  );

  // EXPLAIN of the second hop as it was sent (statistics fresh, as autovacuum keeps them): one
  // plan over the whole 300-node frontier, the edges found through an index on their source.
  const [hop, values] = q.sent[2]!;
  t.same((values![1] as string[]).length, 300, 'the hop carried the whole frontier');
  await db.query('ANALYZE graph_elements');
  const plan = (await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${hop}`, values)).rows
    .map((r) => r['QUERY PLAN'])
    .join('\n');
  t.comment(plan);
  t.match(
    plan,
    /Index (Only )?Scan using graph_edges_out\w* on graph_elements e|Bitmap Index Scan on graph_edges_out\w*/,
  );
});

t.test('fanout: edges one hop fetches, over the whole frontier', async (t) => {
  const star = await newSession();
  await insertNodes(db, star, [['hub', 'H'], ...ids('s', 1001).map((id) => [id, 'S'] as const)]);
  await insertEdges(
    db,
    star,
    ids('s', 1001).map((id, i) => [`h${i}`, 'e', 'hub', id] as const),
  );
  const q = counting(db);
  t.same(await refusal(t, star, { start: { ids: ['hub'] }, steps: [{ direction: 'out' }] }, DEFAULT_CAPS, q), {
    code: 'graph_traversal_limit_exceeded',
    limit: { id: 'workflow.graph_query_fanout', value: 1000 },
  });
  t.equal(q.statements.length, 2, 'refused on the first hop');
  // At the boundary (small caps): exactly `fanout` edges pass, one more is refused.
  const caps = {
    ...DEFAULT_CAPS,
    fanout: { ...DEFAULT_CAPS.fanout, value: 1001 },
    results: { ...DEFAULT_CAPS.results, value: 1002 },
  };
  t.equal((await run(star, { start: { ids: ['hub'] }, steps: [{ direction: 'out' }] }, caps)).ends.length, 1001);
  // The cap counts a hop's edges across the frontier: 1001 leaves each with one edge back in.
  t.same(
    await refusal(
      t,
      star,
      { start: { label: 'S' }, steps: [{ direction: 'in' }] },
      { ...DEFAULT_CAPS, results: caps.results },
    ),
    { code: 'graph_traversal_limit_exceeded', limit: { id: 'workflow.graph_query_fanout', value: 1000 } },
  );
});

t.test('results: the start set, a frontier, a step output and the result each bound', async (t) => {
  const many = await newSession();
  await insertNodes(
    db,
    many,
    ids('p', 1001).map((id) => [id, 'P'] as const),
  );
  t.same(await refusal(t, many, { start: { label: 'P' } }), {
    code: 'graph_traversal_limit_exceeded',
    limit: { id: 'workflow.graph_query_results', value: 1000 },
  });
  t.equal(
    (
      await run(
        many,
        { start: { label: 'P', where: {} }, steps: [] },
        { ...DEFAULT_CAPS, results: { ...DEFAULT_CAPS.results, value: 1001 } },
      )
    ).nodes.length,
    1001,
  );

  // Wide two hops: root -> 600 -> 600. No hop passes fanout or results, the result (1201) does.
  const wide = await newSession();
  await insertNodes(db, wide, [
    ['root', 'R'],
    ...ids('a', 600).map((id) => [id, 'A'] as const),
    ...ids('b', 600).map((id) => [id, 'B'] as const),
  ]);
  await insertEdges(db, wide, [
    ...ids('a', 600).map((id, i) => [`ra${i}`, 'e', 'root', id] as const),
    ...ids('a', 600).map((id, i) => [`ab${i}`, 'e', id, `b${i}`] as const),
  ]);
  t.same(await refusal(t, wide, { start: { ids: ['root'] }, steps: [{ direction: 'out' }, { direction: 'out' }] }), {
    code: 'graph_traversal_limit_exceeded',
    limit: { id: 'workflow.graph_query_results', value: 1000 },
  });
  // One step 1..2: its output (a* and b*, 1200) passes the cap before the result is built.
  t.same(await refusal(t, wide, { start: { ids: ['root'] }, steps: [{ direction: 'out', max: 2 }] }), {
    code: 'graph_traversal_limit_exceeded',
    limit: { id: 'workflow.graph_query_results', value: 1000 },
  });
  // Ending on B: the step's output is 600, but the paths to it hold 1201 nodes.
  t.same(await refusal(t, wide, { start: { ids: ['root'] }, steps: [{ direction: 'out', max: 2, node_label: 'B' }] }), {
    code: 'graph_traversal_limit_exceeded',
    limit: { id: 'workflow.graph_query_results', value: 1000 },
  });
  // A hop's frontier is bounded as it is reached (here with a small cap, as fanout bounds it by default).
  const tight = { ...DEFAULT_CAPS, results: { ...DEFAULT_CAPS.results, value: 599 } };
  t.same(await refusal(t, wide, { start: { ids: ['root'] }, steps: [{ direction: 'out', max: 2 }] }, tight), {
    code: 'graph_traversal_limit_exceeded',
    limit: { id: 'workflow.graph_query_results', value: 599 },
  });
  t.match(lastMessage, /frontier after hop 1 of step 0/);
  // From one middle node the same query is small.
  t.same(idsOf(await run(wide, { start: { ids: ['a7'] }, steps: [{ direction: 'out', max: 2, node_label: 'B' }] })), {
    nodes: ['a7', 'b7'],
    edges: ['ab7'],
    ends: ['b7'],
  });
});

t.test('elements: everything fetched across all steps, as a running total', async (t) => {
  // root -> 900 -> 900 -> 900: each hop fetches 900 edges and 900 nodes; the third passes 5000.
  const layered = await newSession();
  const layer = (p: string) => ids(p, 900).map((id) => [id, p.toUpperCase()] as const);
  await insertNodes(db, layered, [['root', 'R'], ...layer('a'), ...layer('b'), ...layer('c')]);
  await insertEdges(db, layered, [
    ...ids('a', 900).map((id, i) => [`ra${i}`, 'e', 'root', id] as const),
    ...ids('a', 900).map((id, i) => [`ab${i}`, 'e', id, `b${i}`] as const),
    ...ids('b', 900).map((id, i) => [`bc${i}`, 'e', id, `c${i}`] as const),
  ]);
  const q = counting(db);
  t.same(
    await refusal(
      t,
      layered,
      {
        start: { ids: ['root'] },
        steps: [{ direction: 'out' }, { direction: 'out' }, { direction: 'out', where: { never: true } }],
      },
      DEFAULT_CAPS,
      q,
    ),
    { code: 'graph_traversal_limit_exceeded', limit: { id: 'workflow.graph_query_elements', value: 5000 } },
  );
  t.equal(q.statements.length, 4, 'refused on the third hop, before the result is read');
  // Two hops fetch 1 + 3600: within the cap (and a narrow end keeps the result small).
  t.same(
    idsOf(
      await run(layered, {
        start: { ids: ['root'] },
        steps: [{ direction: 'out' }, { direction: 'out', where: { never: true } }],
      }),
    ),
    { nodes: [], edges: [], ends: [] },
  );
  // The boundary: exactly the cap passes.
  const exact = { ...DEFAULT_CAPS, elements: { ...DEFAULT_CAPS.elements, value: 1 + 1800 + 1800 } };
  t.same(
    (
      await run(
        layered,
        { start: { ids: ['root'] }, steps: [{ direction: 'out' }, { direction: 'out', where: { never: true } }] },
        exact,
      )
    ).nodes,
    [],
  );
  const under = { ...DEFAULT_CAPS, elements: { ...DEFAULT_CAPS.elements, value: 1 + 1800 + 1799 } };
  t.same(
    await refusal(
      t,
      layered,
      { start: { ids: ['root'] }, steps: [{ direction: 'out' }, { direction: 'out', where: { never: true } }] },
      under,
    ),
    { code: 'graph_traversal_limit_exceeded', limit: { id: 'workflow.graph_query_elements', value: 3600 } },
  );
});

t.test('caps come from the session blob through limitsInForce', async (t) => {
  const caps = await graphQueryCaps(db, chain.blobId);
  t.same(caps, DEFAULT_CAPS);
});

t.test("a start by label with where reads the properties' index, not every node of the label", async (t) => {
  const session = await newSession();
  const people = ids('p', 20_000);
  await insertNodes(
    db,
    session,
    people.map((id, i) => [id, 'person', { name: `name-${i}`, team: i % 10 }] as const),
  );
  await db.query('ANALYZE graph_elements');
  const plans: string[] = [];
  const explaining = {
    async query(text: string, values?: unknown[]) {
      if (text.includes('LIMIT') && !text.includes('ANY($2')) {
        const { rows } = await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
        plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
      }
      return db.query(text, values);
    },
  } as Queryable;
  const found = await run(
    session,
    { start: { label: 'person', where: { name: 'name-12345' } } },
    DEFAULT_CAPS,
    explaining,
  );
  t.same(
    found.nodes.map((n) => n.id),
    ['p12345'],
  );
  t.match(plans[0], /graph_elements_properties_idx/, 'the start set is found through the properties index');
});
