import { z } from 'zod';

/**
 * The shapes of graph elements and of the graph query (docs/graph.md, "Elements" and
 * "`query_session_graph`"), shared by the session graph commands, the `graph.mutate` processor and
 * graph blobs' `query_graph`. docs/graph.md explains
 * every rule written here.
 */

/**
 * An element id: 1–128 printable ASCII characters without spaces. Ids are the client's own
 * (`user:42`, `a/b#c`), unique per graph across nodes and edges; the bound keeps cursors,
 * messages and indexes small, and leaving out controls and spaces keeps ids safe to show.
 */
const ELEMENT_ID_RE = /^[\x21-\x7e]{1,128}$/;

/** A node or edge label: 1–64 printable ASCII characters without spaces. */
const LABEL_RE = /^[\x21-\x7e]{1,64}$/;

export const elementIdSchema = z
  .string()
  .regex(ELEMENT_ID_RE, 'element ids are 1-128 printable ASCII characters without spaces');

export const labelSchema = z.string().regex(LABEL_RE, 'labels are 1-64 printable ASCII characters without spaces');

/**
 * A JSON object of properties (or of the properties a `where` must contain). PostgreSQL's jsonb
 * cannot hold U+0000, so it is refused here as a bad body rather than failing in the database.
 */
export const propertiesSchema = z
  .record(z.string(), z.unknown())
  .refine((value) => !JSON.stringify(value).includes('\\u0000'), 'properties may not contain the character U+0000');

export const DIRECTIONS = ['out', 'in', 'both'] as const;
export type Direction = (typeof DIRECTIONS)[number];

const startSchema = z.union([
  z.strictObject({ ids: z.array(elementIdSchema).min(1) }),
  z.strictObject({ label: labelSchema, where: propertiesSchema.optional() }),
]);

/**
 * One step: hop along edges (`edge_label` on every hop), `min`..`max` times, and keep the nodes
 * where the step ends if they match `node_label` and `where`. Intermediate nodes of a repeated
 * step are not filtered. `min` defaults to 1 and `max` to `max(min, 1)`, so `{}` is one hop,
 * `{max: 3}` is 1..3, `{min: 0}` is 0..1 (an optional hop) and `{min: 2}` exactly 2.
 */
const stepSchema = z
  .strictObject({
    direction: z.enum(DIRECTIONS),
    edge_label: labelSchema.optional(),
    node_label: labelSchema.optional(),
    where: propertiesSchema.optional(),
    min: z.int().min(0).optional(),
    max: z.int().min(1).optional(),
  })
  .refine((step) => step.min === undefined || step.max === undefined || step.min <= step.max, 'min may not exceed max');

/** The graph query (docs/graph.md, "`query_session_graph`"): a start set and the steps that walk from it. */
export const graphQuerySchema = z.strictObject({
  start: startSchema,
  steps: z.array(stepSchema).optional(),
});

export type GraphQuery = z.output<typeof graphQuerySchema>;
export type GraphQueryStep = NonNullable<GraphQuery['steps']>[number];

/** A step with its repetition bounds settled. */
export interface ResolvedStep {
  direction: Direction;
  edgeLabel: string | null;
  nodeLabel: string | null;
  where: Record<string, unknown> | null;
  min: number;
  max: number;
}

/** Applies the `min`/`max` defaults (see stepSchema). */
export function resolveStep(step: GraphQueryStep): ResolvedStep {
  const min = step.min ?? 1;
  return {
    direction: step.direction,
    edgeLabel: step.edge_label ?? null,
    nodeLabel: step.node_label ?? null,
    where: step.where ?? null,
    min,
    max: step.max ?? Math.max(min, 1),
  };
}

/** A query's depth: the most hops any path may take, i.e. the sum of every step's `max`. */
export function queryDepth(steps: readonly ResolvedStep[]): number {
  return steps.reduce((sum, step) => sum + step.max, 0);
}
