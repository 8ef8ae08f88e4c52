import type { Db, Queryable, Tx } from '../db/db.ts';
import { limitRefusal, type LimitInForce } from '../limits/index.ts';
import { limitsInForce } from '../limits/in-force.ts';
import {
  elementRecord,
  sessionGraphStore,
  type ElementRow,
  type GraphEdge,
  type GraphNode,
  type GraphStore,
} from './graph-elements-sql.ts';

export { sessionGraphStore, type GraphStore };
import { queryDepth, resolveStep, type GraphQuery, type ResolvedStep } from './query-schema.ts';

/**
 * The graph query engine (docs/graph.md, "`query_session_graph`"), shared by `query_session_graph` and graph
 * blobs' `query_graph`. docs/graph.md states the semantics; in short:
 *
 * - The walk is set-based: each hop is ONE statement over the whole frontier (`source =
 *   ANY($frontier)`), never one per element, and a frontier is a set, so cycles cost at most one
 *   revisit per hop and never loop (a path has at most `depth` hops).
 * - A step repeated `min..max` times is unrolled into hop layers; nodes at the end of a step are
 *   filtered (`node_label`, `where`), intermediate ones are not.
 * - The result is the union of every matched path (start to end of the last step): `nodes`,
 *   `edges`, and `ends`, the ids of the nodes where matched paths end. A backward pass over the
 *   layers keeps only elements on some path that reached the end.
 * - Four caps refuse the whole query with `graph_traversal_limit_exceeded` and the cap's limit
 *   object, never a partial graph: depth before any SQL runs; fanout per hop (edges fetched,
 *   read with LIMIT fanout + 1 to notice the excess); results for the start set, every hop's
 *   frontier, every step's output and the result's nodes; elements for everything fetched
 *   (start nodes, then each hop's edges plus the distinct nodes they reach), as a running total.
 *
 * Hops fetch ids only; the result's elements are read whole once at the end. Run it inside one
 * REPEATABLE READ transaction (see inSnapshot) so every statement sees the same graph.
 */

type Cap = LimitInForce & { readonly value: number };

/** The caps a query is held to, each refusing with its own limit object. */
export interface GraphQueryCaps {
  depth: Cap;
  fanout: Cap;
  results: Cap;
  elements: Cap;
}

/** The query caps in force for a session of `blobId`. */
export async function graphQueryCaps(q: Queryable, blobId: string): Promise<GraphQueryCaps> {
  const limits = await limitsInForce(q, { blobId });
  return {
    depth: limits['workflow.graph_query_depth'],
    fanout: limits['workflow.graph_query_fanout'],
    results: limits['workflow.graph_query_results'],
    elements: limits['workflow.graph_query_elements'],
  };
}

/**
 * Runs `query` on a session's graph under the caps in force for the session's blob, in one
 * snapshot: what `query_session_graph` and `ctx.graph.query` in a run both do. The query must
 * already have passed `graphQuerySchema`.
 */
export async function runSessionGraphQuery(
  db: Db,
  sessionId: string,
  blobId: string,
  query: GraphQuery,
): Promise<GraphQueryResult> {
  const caps = await graphQueryCaps(db, blobId);
  return inSnapshot(db, (tx) => runGraphQuery(tx, sessionGraphStore(sessionId), query, caps));
}

/**
 * Runs `fn` in a REPEATABLE READ, READ ONLY transaction: every statement of a query sees one
 * snapshot, so a concurrent mutation cannot make a hop reach a node the final read no longer finds.
 */
export function inSnapshot<T>(db: Db, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    return fn(tx);
  });
}

export interface GraphQueryResult {
  /** Every node on a matched path, in creation order. */
  nodes: GraphNode[];
  /** Every edge on a matched path, in creation order. */
  edges: GraphEdge[];
  /** The ids of the nodes where matched paths end (a subset of `nodes`), in creation order. */
  ends: string[];
}

function refuse(cap: Cap, message: string): never {
  throw limitRefusal('graph_traversal_limit_exceeded', cap, undefined, `${message}; limit ${cap.id} is ${cap.value}.`);
}

/** One traversal of one edge in one hop: from the frontier node `from` to `to`. */
interface Traversal {
  edge: string;
  from: string;
  to: string;
}

/** What the forward pass keeps of one step, for the backward pass. */
interface StepTrace {
  step: ResolvedStep;
  /** `layers[k]`: the nodes reached after k hops of this step (`layers[0]` is the step's input). */
  layers: Array<Set<string>>;
  /** `hops[k]`: the traversals from `layers[k - 1]` into `layers[k]` (`hops[0]` is unused). */
  hops: Traversal[][];
  /** The step's output: nodes of `layers[min..max]` that pass its node filter. */
  output: Set<string>;
}

/** The SQL of the engine; table and scope column are code constants (see GraphStore). */
function statements(store: GraphStore) {
  const t = store.table;
  const s = store.scopeColumn;
  // `$3 IS NULL OR ...`: unnamed statements are planned with their values, so a null filter
  // folds away and the indexes on (scope, source|target, ...) still serve the hop.
  const edgeArm = (from: 'source' | 'target', to: 'source' | 'target', extra = '') =>
    `SELECT e.id, e.${from} AS from_id, e.${to} AS to_id FROM ${t} e
      WHERE e.${s} = $1 AND e.kind = 'edge' AND e.${from} = ANY($2::text[])
        AND ($3::text IS NULL OR e.label = $3::text)${extra}`;
  const arms = {
    out: edgeArm('source', 'target'),
    in: edgeArm('target', 'source'),
    // A self-loop at a frontier node is the same traversal either way: the out arm has it.
    both: `${edgeArm('source', 'target')} UNION ALL ${edgeArm('target', 'source', ' AND e.source <> e.target')}`,
  };
  const passes = '($5::text IS NULL OR n.label = $5::text) AND ($6::jsonb IS NULL OR n.properties @> $6::jsonb)';
  return {
    startByIds: `SELECT id FROM ${t} WHERE ${s} = $1 AND kind = 'node' AND id = ANY($2::text[]) LIMIT $3::int`,
    startByLabel: `SELECT id FROM ${t} WHERE ${s} = $1 AND kind = 'node' AND label = $2::text
                     AND ($3::jsonb IS NULL OR properties @> $3::jsonb) LIMIT $4::int`,
    hop: (direction: ResolvedStep['direction']) =>
      `SELECT h.id, h.from_id, h.to_id, ${passes} AS passes
         FROM (${arms[direction]}) h
         JOIN ${t} n ON n.${s} = $1 AND n.id = h.to_id AND n.kind = 'node'
        LIMIT $4::int`,
    filter: `SELECT id FROM ${t} WHERE ${s} = $1 AND kind = 'node' AND id = ANY($2::text[])
               AND ($3::text IS NULL OR label = $3::text) AND ($4::jsonb IS NULL OR properties @> $4::jsonb)`,
    fetch: `SELECT id, kind, label, source, target, properties, seq FROM ${t}
             WHERE ${s} = $1 AND id = ANY($2::text[]) ORDER BY seq`,
  };
}

const json = (value: Record<string, unknown> | null | undefined): string | null =>
  value == null ? null : JSON.stringify(value);

/**
 * Runs `query` against the graph in `store` under `caps` (see the module comment). Statements
 * issued: one for the start set, one per hop (a hop over an empty frontier is skipped), one per
 * step with `min` 0 and a node filter (to filter the step's input), one to read the result.
 */
export async function runGraphQuery(
  q: Queryable,
  store: GraphStore,
  query: GraphQuery,
  caps: GraphQueryCaps,
): Promise<GraphQueryResult> {
  const steps = (query.steps ?? []).map(resolveStep);
  const depth = queryDepth(steps);
  if (depth > caps.depth.value) refuse(caps.depth, `The query may take ${depth} hops`);

  const sql = statements(store);
  let fetched = 0;
  const count = (n: number, what: string) => {
    fetched += n;
    if (fetched > caps.elements.value)
      refuse(caps.elements, `The query fetched more than ${caps.elements.value} elements (${what})`);
  };
  const bound = (size: number, what: string) => {
    if (size > caps.results.value) refuse(caps.results, `${what} holds more than ${caps.results.value} nodes`);
  };

  const startRows =
    'ids' in query.start
      ? (await q.query<{ id: string }>(sql.startByIds, [store.scopeId, query.start.ids, caps.results.value + 1])).rows
      : (
          await q.query<{ id: string }>(sql.startByLabel, [
            store.scopeId,
            query.start.label,
            json(query.start.where),
            caps.results.value + 1,
          ])
        ).rows;
  bound(startRows.length, 'The start set');
  count(startRows.length, 'start');
  const start = new Set(startRows.map((row) => row.id));

  const traces: StepTrace[] = [];
  let input = start;
  for (const [index, step] of steps.entries()) {
    if (input.size === 0) break;
    const filtered = step.nodeLabel !== null || step.where !== null;
    const layers: Array<Set<string>> = [input];
    const hops: Traversal[][] = [[]];
    const passing = new Set<string>();
    if (step.min === 0) {
      if (!filtered) for (const id of input) passing.add(id);
      else {
        const { rows } = await q.query<{ id: string }>(sql.filter, [
          store.scopeId,
          [...input],
          step.nodeLabel,
          json(step.where),
        ]);
        for (const row of rows) passing.add(row.id);
      }
    }
    for (let k = 1; k <= step.max; k += 1) {
      const frontier = layers[k - 1]!;
      if (frontier.size === 0) break;
      const { rows } = await q.query<{ id: string; from_id: string; to_id: string; passes: boolean }>(
        sql.hop(step.direction),
        [store.scopeId, [...frontier], step.edgeLabel, caps.fanout.value + 1, step.nodeLabel, json(step.where)],
      );
      if (rows.length > caps.fanout.value)
        refuse(caps.fanout, `Hop ${k} of step ${index} expands more than ${caps.fanout.value} edges`);
      const reached = new Set<string>();
      for (const row of rows) {
        reached.add(row.to_id);
        if (row.passes) passing.add(row.to_id);
      }
      count(rows.length + reached.size, `hop ${k} of step ${index}`);
      bound(reached.size, `The frontier after hop ${k} of step ${index}`);
      layers.push(reached);
      hops.push(rows.map((row) => ({ edge: row.id, from: row.from_id, to: row.to_id })));
    }
    const output = new Set<string>();
    for (let k = step.min; k < layers.length; k += 1) {
      for (const id of layers[k]!) if (passing.has(id)) output.add(id);
    }
    bound(output.size, `The output of step ${index}`);
    traces.push({ step, layers, hops, output });
    input = output;
  }
  // A walk that ran dry before its last step matched nothing.
  const ends = traces.length < steps.length ? new Set<string>() : input;

  const { nodes, edges } = matchedPaths(traces, ends);
  bound(nodes.size, 'The result');
  if (nodes.size === 0) return { nodes: [], edges: [], ends: [] };

  const { rows } = await q.query<ElementRow>(sql.fetch, [store.scopeId, [...nodes, ...edges]]);
  const result: GraphQueryResult = { nodes: [], edges: [], ends: [] };
  for (const row of rows) {
    const record = elementRecord(row);
    if (record.kind === 'node') {
      result.nodes.push(record);
      if (ends.has(record.id)) result.ends.push(record.id);
    } else result.edges.push(record);
  }
  return result;
}

/**
 * The backward pass: from the ends, walk the recorded layers back to the start and keep each
 * traversal whose far node is alive in its layer (it lies on a path that reaches the end) and
 * the node it came from. Layers make this exact for repeated steps and cycles: a node alive
 * after 2 hops is not thereby alive after 1.
 */
function matchedPaths(
  traces: readonly StepTrace[],
  ends: ReadonlySet<string>,
): { nodes: Set<string>; edges: Set<string> } {
  const nodes = new Set<string>(ends);
  const edges = new Set<string>();
  let aliveOut: ReadonlySet<string> = ends;
  for (let i = traces.length - 1; i >= 0; i -= 1) {
    const { step, layers, hops } = traces[i]!;
    let aliveAfter = new Set<string>();
    for (let k = layers.length - 1; k >= 0; k -= 1) {
      const alive = new Set<string>();
      // A path may leave the step after k hops if k is in range and the node went on to the end.
      if (k >= step.min && k <= step.max) for (const id of layers[k]!) if (aliveOut.has(id)) alive.add(id);
      if (k + 1 < layers.length) {
        for (const hop of hops[k + 1]!) {
          if (!aliveAfter.has(hop.to)) continue;
          edges.add(hop.edge);
          alive.add(hop.from);
        }
      }
      for (const id of alive) nodes.add(id);
      aliveAfter = alive;
    }
    aliveOut = aliveAfter;
  }
  return { nodes, edges };
}
