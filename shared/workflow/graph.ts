/**
 * The definition graph (docs/workflow.md, "The graph format"): `{start, nodes: {name: {processor, config, routes?, retry?, timeout_seconds?}}}`.
 * These schemas check the shape only; what a processor's config must hold, where routes lead
 * and whether `logic.code` compiles is validate-graph.ts's business, so that every problem comes
 * back as one issue naming its node and field rather than as a request-body error.
 */
import { z } from 'zod';

/** A node name: 1–64 characters of `A-Z a-z 0-9 _ . -`, not starting with `.` or `-`. */
export const NODE_NAME_RE = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;

/**
 * A route name: 1–64 characters of `a-z 0-9 _ . -`, not starting with `.` or `-`. `success` and
 * `failure` are route names like any other; `logic.code` and `logic.switch` take named ones too.
 */
export const ROUTE_NAME_RE = /^[a-z0-9_][a-z0-9_.-]{0,63}$/;

/** Most nodes one graph may hold. */
export const MAX_NODES = 500;

/** Largest graph, measured as its JSON serialization in UTF-8 bytes. */
export const MAX_GRAPH_BYTES = 2 * 1024 * 1024;

/** Where a node's run goes next: route name → node name, or `null` to end the execution. */
type Routes = Record<string, string | null>;

/** One node of a graph as stored. `config` is checked against its processor's schema separately. */
export interface GraphNode {
  processor: string;
  config?: Record<string, unknown>;
  routes?: Routes;
  /** The node's retry policy (node-policy.ts `retrySchema`), checked by validate-graph.ts. */
  retry?: unknown;
  /** The node's own run timeout (node-policy.ts `timeoutSchema`). */
  timeout_seconds?: unknown;
}

/** A definition's graph as stored and as an execution runs it. */
export interface WorkflowGraph {
  start: string;
  nodes: Record<string, GraphNode>;
}

/** The graph's outer shape; each node is parsed on its own by `nodeSchema` (see validate-graph.ts). */
export const graphShapeSchema = z.strictObject({
  start: z.string(),
  nodes: z.record(z.string(), z.unknown()),
});

/** One node's shape. A missing `config` means `{}`; a missing `routes` means every route ends the execution. */
export const nodeSchema = z.strictObject({
  processor: z.string().min(1).max(100),
  config: z.record(z.string(), z.unknown()).optional(),
  routes: z.record(z.string(), z.string().nullable()).optional(),
  // Checked on their own (validate-graph.ts), so a bad policy is reported beside the node's other issues.
  retry: z.unknown().optional(),
  timeout_seconds: z.unknown().optional(),
});

/** The nodes a route of `node` can lead to (targets that are not null). */
export function routeTargets(node: GraphNode): string[] {
  return Object.values(node.routes ?? {}).filter((target): target is string => target !== null);
}
