import type { Queryable } from '../db/db.ts';
import type { Direction } from './query-schema.ts';

/** A node of a session graph as responses show it (docs/graph.md, "Elements"). */
export interface GraphNode {
  id: string;
  kind: 'node';
  label: string;
  properties: Record<string, unknown>;
}

/** An edge of a session graph; `source` and `target` are ids of nodes of the same graph. */
export interface GraphEdge {
  id: string;
  kind: 'edge';
  label: string;
  source: string;
  target: string;
  properties: Record<string, unknown>;
}

export type GraphElement = GraphNode | GraphEdge;

export interface ElementRow {
  id: string;
  kind: 'node' | 'edge';
  label: string;
  source: string | null;
  target: string | null;
  properties: Record<string, unknown>;
  seq: number;
}

const COLUMNS = 'id, kind, label, source, target, properties, seq';

/**
 * Where a graph's elements live: a table with the columns of `graph_elements`, and one graph's
 * scope — a session's graph (`graph_elements`, `session_id`) or a graph blob revision's
 * (`revision_graph_elements`, `revision_id`). Table and column come from code, never from input:
 * they are written into SQL.
 */
export interface GraphStore {
  readonly table: 'graph_elements' | 'revision_graph_elements';
  readonly scopeColumn: 'session_id' | 'revision_id';
  /** The graph's scope value (a session id or a revision id). */
  readonly scopeId: string;
}

/** The store of one session's graph. */
export function sessionGraphStore(sessionId: string): GraphStore {
  return { table: 'graph_elements', scopeColumn: 'session_id', scopeId: sessionId };
}

/** The store of one graph blob revision's graph (each revision is its own graph). */
export function revisionGraphStore(revisionId: string): GraphStore {
  return { table: 'revision_graph_elements', scopeColumn: 'revision_id', scopeId: revisionId };
}
const E_COLUMNS = 'e.id, e.kind, e.label, e.source, e.target, e.properties, e.seq';

/** The element record of a row: the documented fields in their documented order, nothing else (docs/graph.md, "Elements"). */
export function elementRecord(
  row: Pick<ElementRow, 'id' | 'kind' | 'label' | 'source' | 'target' | 'properties'>,
): GraphElement {
  return row.kind === 'node'
    ? { id: row.id, kind: 'node', label: row.label, properties: row.properties }
    : {
        id: row.id,
        kind: 'edge',
        label: row.label,
        source: row.source!,
        target: row.target!,
        properties: row.properties,
      };
}

/**
 * Locks the session row for a graph mutation and returns its status (undefined: no such
 * session). Every writer of a session's graph takes this lock first, which is what keeps `seq`
 * in commit order within one session (see listElements) and endpoints checked against a graph
 * nobody else is changing.
 */
export async function lockSessionForGraph(
  tx: Queryable,
  sessionId: string,
): Promise<'active' | 'deleting' | undefined> {
  const { rows } = await tx.query<{ status: 'active' | 'deleting' }>(
    'SELECT status FROM sessions WHERE id = $1::uuid FOR UPDATE',
    [sessionId],
  );
  return rows[0]?.status;
}

/** The kind of each of `ids` that exists in the graph. */
export async function elementKinds(
  q: Queryable,
  store: GraphStore,
  ids: readonly string[],
): Promise<Map<string, 'node' | 'edge'>> {
  const { rows } = await q.query<{ id: string; kind: 'node' | 'edge' }>(
    `SELECT id, kind FROM ${store.table} WHERE ${store.scopeColumn} = $1::uuid AND id = ANY($2::text[])`,
    [store.scopeId, ids],
  );
  return new Map(rows.map((row) => [row.id, row.kind]));
}

/** One element by id, or undefined. */
export async function findElement(q: Queryable, sessionId: string, id: string): Promise<ElementRow | undefined> {
  const { rows } = await q.query<ElementRow>(
    `SELECT ${COLUMNS} FROM graph_elements WHERE session_id = $1::uuid AND id = $2`,
    [sessionId, id],
  );
  return rows[0];
}

/**
 * Creates or replaces a node. An existing element keeps its `seq` (its place in listings). No
 * row comes back when the id belongs to an edge: the caller refuses that.
 */
export async function upsertNode(
  tx: Queryable,
  store: GraphStore,
  node: { id: string; label: string; properties: Record<string, unknown> },
): Promise<ElementRow | undefined> {
  const { rows } = await tx.query<ElementRow>(
    `INSERT INTO ${store.table} AS g (${store.scopeColumn}, id, kind, label, properties)
     VALUES ($1::uuid, $2, 'node', $3, $4::jsonb)
     ON CONFLICT (${store.scopeColumn}, id) DO UPDATE
       SET label = EXCLUDED.label, properties = EXCLUDED.properties, updated_at = now()
       WHERE g.kind = 'node'
     RETURNING ${COLUMNS}`,
    [store.scopeId, node.id, node.label, JSON.stringify(node.properties)],
  );
  return rows[0];
}

/** As upsertNode, for an edge; the caller has checked that both endpoints are nodes. */
export async function upsertEdge(
  tx: Queryable,
  store: GraphStore,
  edge: { id: string; label: string; source: string; target: string; properties: Record<string, unknown> },
): Promise<ElementRow | undefined> {
  const { rows } = await tx.query<ElementRow>(
    `INSERT INTO ${store.table} AS g (${store.scopeColumn}, id, kind, label, source, target, properties)
     VALUES ($1::uuid, $2, 'edge', $3, $4, $5, $6::jsonb)
     ON CONFLICT (${store.scopeColumn}, id) DO UPDATE
       SET label = EXCLUDED.label, source = EXCLUDED.source, target = EXCLUDED.target,
           properties = EXCLUDED.properties, updated_at = now()
       WHERE g.kind = 'edge'
     RETURNING ${COLUMNS}`,
    [store.scopeId, edge.id, edge.label, edge.source, edge.target, JSON.stringify(edge.properties)],
  );
  return rows[0];
}

/**
 * Deletes an element and, when it is a node, every edge that starts or ends at it (ids are unique
 * across kinds, so only a node can be some edge's endpoint). Returns what was removed.
 */
export async function deleteElement(
  tx: Queryable,
  store: GraphStore,
  id: string,
): Promise<Array<{ id: string; kind: 'node' | 'edge' }>> {
  const { rows } = await tx.query<{ id: string; kind: 'node' | 'edge' }>(
    `DELETE FROM ${store.table}
      WHERE ${store.scopeColumn} = $1::uuid AND (id = $2 OR (kind = 'edge' AND (source = $2 OR target = $2)))
      RETURNING id, kind`,
    [store.scopeId, id],
  );
  return rows;
}

export interface ElementFilter {
  kind: 'node' | 'edge' | null;
  label: string | null;
}

/**
 * One page of the session's elements in `seq` order after `after`, `limit` rows (callers ask for
 * one more to learn whether more follow). Keyset on `seq` is safe against concurrent writers:
 * writers hold the session lock from before they draw a `seq` until they commit, so a reader
 * never sees a later `seq` commit before an earlier one of the same session.
 */
export async function listElements(
  q: Queryable,
  sessionId: string,
  filter: ElementFilter,
  after: number,
  limit: number,
): Promise<ElementRow[]> {
  const { rows } = await q.query<ElementRow>(
    `SELECT ${COLUMNS} FROM graph_elements
      WHERE session_id = $1::uuid AND seq > $2::bigint
        AND ($3::text IS NULL OR kind = $3) AND ($4::text IS NULL OR label = $4)
      ORDER BY seq LIMIT $5::int`,
    [sessionId, after, filter.kind, filter.label, limit],
  );
  return rows;
}

export interface NeighborRow {
  edge: ElementRow;
  node: ElementRow;
  direction: 'out' | 'in';
}

interface JoinedRow extends ElementRow {
  n_id: string;
  n_kind: 'node';
  n_label: string;
  n_properties: Record<string, unknown>;
  n_seq: number;
  direction: 'out' | 'in';
}

/**
 * One page of a node's neighbours: the edges at `nodeId` in `direction` (optionally of one
 * label), each with the node at its far end, in the edge's `seq` order after `after`. A
 * self-loop is one row (direction `out` when both are asked for).
 */
export async function listNeighbors(
  q: Queryable,
  sessionId: string,
  nodeId: string,
  direction: Direction,
  edgeLabel: string | null,
  after: number,
  limit: number,
): Promise<NeighborRow[]> {
  const at = { out: 'e.source = $2', in: 'e.target = $2', both: '(e.source = $2 OR e.target = $2)' }[direction];
  const dir = { out: `'out'`, in: `'in'`, both: `CASE WHEN e.source = $2 THEN 'out' ELSE 'in' END` }[direction];
  const far = { out: 'e.target', in: 'e.source', both: 'CASE WHEN e.source = $2 THEN e.target ELSE e.source END' }[
    direction
  ];
  const { rows } = await q.query<JoinedRow>(
    `SELECT ${E_COLUMNS}, ${dir} AS direction,
            n.id AS n_id, n.kind AS n_kind, n.label AS n_label, n.properties AS n_properties, n.seq AS n_seq
       FROM graph_elements e
       JOIN graph_elements n ON n.session_id = e.session_id AND n.id = ${far}
      WHERE e.session_id = $1::uuid AND e.kind = 'edge' AND ${at}
        AND ($3::text IS NULL OR e.label = $3) AND e.seq > $4::bigint
      ORDER BY e.seq LIMIT $5::int`,
    [sessionId, nodeId, edgeLabel, after, limit],
  );
  return rows.map((row) => ({
    edge: {
      id: row.id,
      kind: row.kind,
      label: row.label,
      source: row.source,
      target: row.target,
      properties: row.properties,
      seq: row.seq,
    },
    node: {
      id: row.n_id,
      kind: row.n_kind,
      label: row.n_label,
      source: null,
      target: null,
      properties: row.n_properties,
      seq: row.n_seq,
    },
    direction: row.direction,
  }));
}
