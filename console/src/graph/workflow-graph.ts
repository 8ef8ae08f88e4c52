/**
 * A definition's graph as the console draws it: its nodes and routes (failure routes marked),
 * laid out top to bottom with dagre, and each node's state in one execution.
 */
import { Graph, layout } from '@dagrejs/dagre';

export interface NodeSpec {
  processor: string;
  config?: Record<string, unknown>;
  routes?: Record<string, string | null>;
}

export interface GraphSpec {
  start: string;
  nodes: Record<string, NodeSpec>;
}

/** A node's state in an execution (docs/architecture.md, "Execution events"). */
export type NodeState = 'queued' | 'running' | 'succeeded' | 'failed' | 'skipped';

export interface RouteEdge {
  id: string;
  from: string;
  to: string;
  route: string;
  failure: boolean;
}

export const NODE_WIDTH = 190;
export const NODE_HEIGHT = 64;

/** The graph of a definition record, or null when it has no nodes of the expected shape. */
export function graphOf(value: unknown): GraphSpec | null {
  if (typeof value !== 'object' || value === null) return null;
  const { start, nodes } = value as { start?: unknown; nodes?: unknown };
  if (typeof nodes !== 'object' || nodes === null || Array.isArray(nodes)) return null;
  const spec: GraphSpec = { start: typeof start === 'string' ? start : '', nodes: {} };
  for (const [name, node] of Object.entries(nodes as Record<string, unknown>)) {
    if (typeof node !== 'object' || node === null) continue;
    const { processor, config, routes } = node as Record<string, unknown>;
    spec.nodes[name] = {
      processor: typeof processor === 'string' ? processor : '?',
      config: typeof config === 'object' && config !== null ? (config as Record<string, unknown>) : {},
      routes:
        typeof routes === 'object' && routes !== null
          ? Object.fromEntries(
              Object.entries(routes as Record<string, unknown>).map(([route, to]) => [
                route,
                typeof to === 'string' ? to : null,
              ]),
            )
          : {},
    };
  }
  return spec;
}

/** Every route that leads to a node of the graph. */
export function edgesOf(graph: GraphSpec): RouteEdge[] {
  const edges: RouteEdge[] = [];
  for (const [from, node] of Object.entries(graph.nodes)) {
    for (const [route, to] of Object.entries(node.routes ?? {})) {
      if (to === null || !(to in graph.nodes)) continue;
      edges.push({ id: `${from}:${route}`, from, to, route, failure: route === 'failure' });
    }
  }
  return edges;
}

/** Top-left positions of each node, laid out by dagre, start at the top. */
export function layoutOf(graph: GraphSpec, edges: RouteEdge[]): Map<string, { x: number; y: number }> {
  const g = new Graph({ multigraph: true });
  g.setGraph({ rankdir: 'TB', nodesep: 40, ranksep: 60 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const name of Object.keys(graph.nodes)) g.setNode(name, { width: NODE_WIDTH, height: NODE_HEIGHT });
  for (const edge of edges) g.setEdge(edge.from, edge.to, { label: edge.route, width: 60, height: 20 }, edge.id);
  layout(g);
  const positions = new Map<string, { x: number; y: number }>();
  for (const name of Object.keys(graph.nodes)) {
    const { x, y } = g.node(name) as { x: number; y: number };
    positions.set(name, { x: x - NODE_WIDTH / 2, y: y - NODE_HEIGHT / 2 });
  }
  return positions;
}
