import { z } from 'zod';
import { graphMutationCeilings, graphMutationsSchema, mutateRevisionGraph } from '../../shared/graph/mutations.ts';
import { revisionGraphStore } from '../../shared/graph/graph-elements-sql.ts';
import { graphQueryCaps, inSnapshot, runGraphQuery } from '../../shared/graph/query.ts';
import { graphQuerySchema } from '../../shared/graph/query-schema.ts';
import { limitInForce } from '../../shared/limits/in-force.ts';
import { requireEntitlement } from '../limits/entitlement.ts';
import { defineCommand } from './command.ts';
import { graphEdgeSchema, graphMutationResult, graphNodeSchema } from '../openapi/records.ts';
import { checkElementBounds } from '../limits/storage-bounds.ts';
import { revisionUsage } from '../sql/revision-usage.ts';

/**
 * Graph blob commands (docs/blob-types.md, "Graph blobs"): each revision of a
 * `svc.graph.graphdb` blob is its own property graph, with the element shape, mutations and query
 * engine of the session graph (docs/graph.md). The difference is the result's size: a query's
 * result is cut to `graphdb.query_results` (50, fixed) nodes and as many edges, never refused for
 * its size, with `truncated: true` when anything was dropped.
 */

const GRAPH = ['svc.graph.graphdb'] as const;

/** `mutate_graph {mutations}` → `elements, deleted`: one transaction, all mutations or none. */
const mutateGraphCommand = defineCommand({
  name: 'mutate_graph',
  result: graphMutationResult,
  blobTypes: GRAPH,
  role: 'write',
  params: z.strictObject({ mutations: graphMutationsSchema }),
  async handler(ctx, _principal, params, call) {
    const { blob, revision } = call.revision;
    await requireEntitlement(ctx.db, blob.id, 'graphdb.enabled');
    const ceilings = await graphMutationCeilings(ctx.db, blob.id);
    const outcome = await ctx.db.transaction(async (tx) => {
      // Writers of the revision queue on its row (as mutateRevisionGraph does), so `before` is
      // what this call starts from; the mutations' triggers count what they change.
      await tx.query('SELECT 1 FROM revisions WHERE id = $1::uuid FOR NO KEY UPDATE', [revision.id]);
      const before = await revisionUsage(tx, revision.id);
      const applied = await mutateRevisionGraph(tx, revision.id, params.mutations, ceilings);
      checkElementBounds(before, await revisionUsage(tx, revision.id), ctx.config.storage);
      return applied;
    });
    return { elements: outcome.elements, deleted: outcome.deleted };
  },
});

/**
 * `query_graph {query}` → `nodes, edges, ends, truncated`. The walk is the session graph's, with
 * its depth, fanout and elements caps (bounds on the work, which refuse); the result keeps the
 * first `graphdb.query_results` nodes in creation order, the edges between kept nodes (as many
 * at most), and the ends among kept nodes.
 */
const queryGraphCommand = defineCommand({
  name: 'query_graph',
  result: z.strictObject({
    nodes: z.array(graphNodeSchema),
    edges: z.array(graphEdgeSchema),
    ends: z.array(z.string()),
    truncated: z.boolean(),
  }),
  blobTypes: GRAPH,
  role: 'read',
  params: z.strictObject({ query: graphQuerySchema }),
  async handler(ctx, _principal, params, call) {
    const { blob, revision } = call.revision;
    await requireEntitlement(ctx.db, blob.id, 'graphdb.enabled');
    const rows = await limitInForce(ctx.db, { blobId: blob.id }, 'graphdb.query_results');
    const keep = rows.value as number;
    const caps = await graphQueryCaps(ctx.db, blob.id);
    // The result's size is truncated below, not refused: only the elements cap bounds the sets.
    const result = await inSnapshot(ctx.db, (tx) =>
      runGraphQuery(tx, revisionGraphStore(revision.id), params.query, { ...caps, results: caps.elements }),
    );
    const nodes = result.nodes.slice(0, keep);
    const kept = new Set(nodes.map((node) => node.id));
    const between = result.edges.filter((edge) => kept.has(edge.source) && kept.has(edge.target));
    const edges = between.slice(0, keep);
    const truncated = nodes.length < result.nodes.length || edges.length < result.edges.length;
    return { nodes, edges, ends: result.ends.filter((id) => kept.has(id)), truncated };
  },
});

export const graphBlobCommands = [mutateGraphCommand, queryGraphCommand] as const;
