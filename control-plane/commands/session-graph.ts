import { z } from 'zod';
import type { AppContext } from '../context.ts';
import { decodeCursor, encodeCursor, keysetPage, parseLimit } from '../../shared/cursor.ts';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { graphMutationCeilings, graphMutationsSchema, mutateGraph } from '../../shared/graph/mutations.ts';
import { sessionGraphBounds } from '../../shared/graph/session-graph-usage.ts';
import { runSessionGraphQuery } from '../../shared/graph/query.ts';
import { DIRECTIONS, elementIdSchema, graphQuerySchema, labelSchema } from '../../shared/graph/query-schema.ts';
import { elementRecord, findElement, listElements, listNeighbors } from '../../shared/graph/graph-elements-sql.ts';
import { findSession } from '../workflow/session-ref.ts';
import { defineCommand, WORKFLOW_BLOBS } from './command.ts';
import { graphEdgeSchema, graphElementSchema, graphMutationResult, graphNodeSchema } from '../openapi/records.ts';

/** The session graph commands; docs/graph.md is their reference. */

const LIMIT_RANGE = { fallback: 50, max: 200 };
/** A keyset position: the `seq` of the last element (or, for neighbours, edge) returned. */
const positionSchema = z.number().int().nonnegative();

/** The position a cursor resumes after; the cursor must come from `listing` with exactly `filters`. */
function positionOf(ctx: AppContext, listing: string, filters: object, cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  const position = positionSchema.safeParse(decodeCursor(ctx.config.secrets.CURSOR_KEY, listing, filters, cursor));
  if (!position.success) throw new ServiceError('invalid_cursor');
  return position.data;
}

function nextCursor(
  ctx: AppContext,
  listing: string,
  filters: object,
  more: boolean,
  last: number | undefined,
): string | null {
  return more && last !== undefined ? encodeCursor(ctx.config.secrets.CURSOR_KEY, listing, filters, last) : null;
}

/**
 * `mutate_session_graph {session_id, mutations}` → `elements` (the final state of what the call
 * upserted) and `deleted` (ids it removed). One transaction: all mutations or none.
 */
const mutateSessionGraph = defineCommand({
  name: 'mutate_session_graph',
  result: graphMutationResult,
  blobTypes: WORKFLOW_BLOBS,
  role: 'write',
  params: z.strictObject({ session_id: refSchema, mutations: graphMutationsSchema }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const ceilings = {
      ...(await graphMutationCeilings(ctx.db, call.revision.blob.id)),
      stored: sessionGraphBounds(ctx.config.storage),
    };
    const outcome = await ctx.db.transaction((tx) => mutateGraph(tx, session.id, params.mutations, ceilings));
    return { elements: outcome.elements, deleted: outcome.deleted };
  },
});

const ELEMENTS_LISTING = 'session_graph_elements';

/** `list_session_graph_elements {session_id, kind?, label?, cursor?, limit?}` → `elements, cursor`, in creation order. */
const listSessionGraphElements = defineCommand({
  name: 'list_session_graph_elements',
  result: z.strictObject({ elements: z.array(graphElementSchema), cursor: z.string().nullable() }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({
    session_id: refSchema,
    kind: z.enum(['node', 'edge']).optional(),
    label: labelSchema.optional(),
    cursor: z.string().optional(),
    // Checked by parseLimit so that every malformed limit is `invalid_limit`.
    limit: z.unknown().optional(),
  }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const limit = parseLimit(params.limit, LIMIT_RANGE);
    const filter = { kind: params.kind ?? null, label: params.label ?? null };
    const filters = { session_id: session.id, ...filter };
    const after = positionOf(ctx, ELEMENTS_LISTING, filters, params.cursor);
    const { page, last, more } = keysetPage(await listElements(ctx.db, session.id, filter, after, limit + 1), limit);
    return { elements: page.map(elementRecord), cursor: nextCursor(ctx, ELEMENTS_LISTING, filters, more, last?.seq) };
  },
});

const NEIGHBORS_LISTING = 'session_graph_neighbors';

/**
 * `list_session_graph_neighbors {session_id, element_id, direction?, edge_label?, cursor?,
 * limit?}` → `neighbors: [{direction, edge, node}], cursor`: the edges at a node (default both
 * directions) in the edges' creation order, each with the node at its far end.
 */
const listSessionGraphNeighbors = defineCommand({
  name: 'list_session_graph_neighbors',
  result: z.strictObject({
    neighbors: z.array(
      z.strictObject({ direction: z.enum(['out', 'in']), edge: graphEdgeSchema, node: graphNodeSchema }),
    ),
    cursor: z.string().nullable(),
  }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({
    session_id: refSchema,
    element_id: elementIdSchema,
    direction: z.enum(DIRECTIONS).optional(),
    edge_label: labelSchema.optional(),
    cursor: z.string().optional(),
    limit: z.unknown().optional(),
  }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const limit = parseLimit(params.limit, LIMIT_RANGE);
    const direction = params.direction ?? 'both';
    const edgeLabel = params.edge_label ?? null;
    const filters = { session_id: session.id, element_id: params.element_id, direction, edge_label: edgeLabel };
    const after = positionOf(ctx, NEIGHBORS_LISTING, filters, params.cursor);
    const element = await findElement(ctx.db, session.id, params.element_id);
    if (element === undefined)
      throw new ServiceError('not_found', `No node ${JSON.stringify(params.element_id)} in the session graph.`);
    if (element.kind !== 'node')
      throw new ServiceError(
        'not_found',
        `${JSON.stringify(params.element_id)} is an edge; neighbours are listed for nodes.`,
      );
    const rows = await listNeighbors(ctx.db, session.id, element.id, direction, edgeLabel, after, limit + 1);
    const { page, last, more } = keysetPage(rows, limit);
    return {
      neighbors: page.map((row) => ({
        direction: row.direction,
        edge: elementRecord(row.edge),
        node: elementRecord(row.node),
      })),
      cursor: nextCursor(ctx, NEIGHBORS_LISTING, filters, more, last?.edge.seq),
    };
  },
});

/**
 * `query_session_graph {session_id, query}` → `nodes, edges, ends`: every node and edge on a
 * matched path, and the ids where the paths end. A complete listing bounded by the four
 * `workflow.graph_query_*` caps, which refuse rather than truncate.
 */
const querySessionGraph = defineCommand({
  name: 'query_session_graph',
  result: z.strictObject({
    nodes: z.array(graphNodeSchema),
    edges: z.array(graphEdgeSchema),
    ends: z.array(z.string()),
  }),
  blobTypes: WORKFLOW_BLOBS,
  role: 'read',
  params: z.strictObject({ session_id: refSchema, query: graphQuerySchema }),
  async handler(ctx, _principal, params, call) {
    const session = await findSession(ctx.db, call.revision.revision.id, params.session_id);
    const result = await runSessionGraphQuery(ctx.db, session.id, call.revision.blob.id, params.query);
    return { nodes: result.nodes, edges: result.edges, ends: result.ends };
  },
});

/** The session graph commands, in the order docs/graph.md lists them. */
export const sessionGraphCommands = [
  mutateSessionGraph,
  listSessionGraphElements,
  listSessionGraphNeighbors,
  querySessionGraph,
];
