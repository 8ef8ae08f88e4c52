import { z } from 'zod';
import type { Queryable, Tx } from '../db/db.ts';
import { ServiceError } from '../errors.ts';
import { limitRefusal, type ResolvedLimit } from '../limits/index.ts';
import { appendSessionEvent } from '../events/store.ts';
import { limitsInForce } from '../limits/in-force.ts';
import {
  deleteElement,
  elementKinds,
  elementRecord,
  lockSessionForGraph,
  revisionGraphStore,
  sessionGraphStore,
  upsertEdge,
  upsertNode,
  type GraphElement,
  type GraphStore,
} from './graph-elements-sql.ts';
import { elementIdSchema, labelSchema, propertiesSchema } from './query-schema.ts';
import { checkSessionGraphBounds, sessionGraphUsage, type SessionGraphBounds } from './session-graph-usage.ts';

/**
 * Graph mutations (`upsert_node`, `upsert_edge`, `delete`; docs/graph.md, "`mutate_session_graph`"). `mutateGraph` is the one
 * code path that changes a session graph: `mutate_session_graph` and the `graph.mutate`
 * processor both call it, so ceilings, checks and events cannot differ between them.
 */

const upsertNodeSchema = z.strictObject({
  op: z.literal('upsert_node'),
  id: elementIdSchema,
  label: labelSchema,
  properties: propertiesSchema.optional(),
});

const upsertEdgeSchema = z.strictObject({
  op: z.literal('upsert_edge'),
  id: elementIdSchema,
  label: labelSchema,
  source: elementIdSchema,
  target: elementIdSchema,
  properties: propertiesSchema.optional(),
});

const deleteSchema = z.strictObject({ op: z.literal('delete'), id: elementIdSchema });

/** One mutation. Callers outside the command parse with this (or `graphMutationsSchema`) first. */
const graphMutationSchema = z.discriminatedUnion('op', [upsertNodeSchema, upsertEdgeSchema, deleteSchema]);

/**
 * A call's mutations: at least one. How many at most is `workflow.graph_mutations_per_call`,
 * checked by mutateGraph so that the refusal carries the limit object.
 */
export const graphMutationsSchema = z.array(graphMutationSchema).min(1);

export type GraphMutation = z.output<typeof graphMutationSchema>;

/** The ceilings a mutation call is held to, in force for the session's blob. */
export interface GraphMutationCeilings {
  mutationsPerCall: ResolvedLimit<'workflow.graph_mutations_per_call'>;
  elementBytes: ResolvedLimit<'workflow.graph_element_bytes'>;
}

/** A session graph's: the call's ceilings and what the whole graph may hold (configuration). */
export interface SessionGraphCeilings extends GraphMutationCeilings {
  stored: SessionGraphBounds;
}

/**
 * Resolves the mutation ceilings for a session of `blobId` (a session's limits come from its
 * blob), or for a graph blob: both kinds of graph are held to the same (fixed) ceilings.
 */
export async function graphMutationCeilings(q: Queryable, blobId: string): Promise<GraphMutationCeilings> {
  const limits = await limitsInForce(q, { blobId });
  return {
    mutationsPerCall: limits['workflow.graph_mutations_per_call'],
    elementBytes: limits['workflow.graph_element_bytes'],
  };
}

/** Who caused a mutation, for the `graph.mutated` event: an execution's node, or nobody (a command). */
export interface MutationOrigin {
  executionId?: string | null;
  node?: string | null;
}

/** What a mutation call leaves behind. */
export interface MutationOutcome {
  /** The final state of every element the call upserted and did not delete, by first upsert. */
  elements: GraphElement[];
  /** Ids the call removed: deleted elements and the edges that went with deleted nodes. */
  deleted: string[];
}

/**
 * The element as stored and returned, whose JSON is what `workflow.graph_element_bytes` measures
 * (UTF-8 bytes of `JSON.stringify` of the record, keys in documented order, no whitespace).
 */
function storedRecord(mutation: Exclude<GraphMutation, { op: 'delete' }>): GraphElement {
  const properties = mutation.properties ?? {};
  return mutation.op === 'upsert_node'
    ? { id: mutation.id, kind: 'node', label: mutation.label, properties }
    : {
        id: mutation.id,
        kind: 'edge',
        label: mutation.label,
        source: mutation.source,
        target: mutation.target,
        properties,
      };
}

/** Refuses a call past either ceiling, before anything is read or written. */
function checkCeilings(mutations: readonly GraphMutation[], ceilings: GraphMutationCeilings): void {
  if (mutations.length > ceilings.mutationsPerCall.value) {
    throw limitRefusal(
      'graph_mutation_too_large',
      ceilings.mutationsPerCall,
      undefined,
      `${mutations.length} mutations in one call; limit workflow.graph_mutations_per_call is ${ceilings.mutationsPerCall.value}.`,
    );
  }
  mutations.forEach((mutation, index) => {
    if (mutation.op === 'delete') return;
    const bytes = Buffer.byteLength(JSON.stringify(storedRecord(mutation)), 'utf8');
    if (bytes > ceilings.elementBytes.value) {
      throw limitRefusal(
        'graph_element_too_large',
        ceilings.elementBytes,
        undefined,
        `mutations[${index}]: element ${JSON.stringify(mutation.id)} is ${bytes} bytes; limit workflow.graph_element_bytes is ${ceilings.elementBytes.value}.`,
      );
    }
  });
}

function conflict(index: number, message: string): ServiceError {
  return new ServiceError('conflict', `mutations[${index}]: ${message}`);
}

/** Counts of what a call did, for the session's `graph.mutated` event. */
interface MutationCounts {
  nodes_upserted: number;
  edges_upserted: number;
  elements_deleted: number;
}

/**
 * Applies `mutations` to the graph in `store`, in order, inside `tx`, whose caller already holds
 * the lock that serialises the graph's writers. Per mutation:
 * - `upsert_node` / `upsert_edge` create the element or replace its label, properties (and
 *   endpoints) whole; omitted properties are `{}`. An id held by the other kind is `conflict`.
 * - `upsert_edge` needs `source` and `target` to be nodes now (in the graph, or upserted earlier
 *   in the call and not deleted since), else `conflict`.
 * - `delete` removes the element and, for a node, every edge at it; an absent id is a no-op.
 */
async function applyMutations(
  tx: Tx,
  store: GraphStore,
  mutations: readonly GraphMutation[],
): Promise<MutationOutcome & { counts: MutationCounts }> {
  // Map order is first-upsert order; a delete removes the entry, a later upsert re-adds it last.
  const written = new Map<string, GraphElement>();
  const deleted = new Set<string>();
  const counts: MutationCounts = { nodes_upserted: 0, edges_upserted: 0, elements_deleted: 0 };

  for (const [index, mutation] of mutations.entries()) {
    if (mutation.op === 'delete') {
      for (const removed of await deleteElement(tx, store, mutation.id)) {
        written.delete(removed.id);
        deleted.add(removed.id);
        counts.elements_deleted += 1;
      }
      continue;
    }
    const record = storedRecord(mutation);
    if (record.kind === 'edge') {
      const kinds = await elementKinds(tx, store, [record.source, record.target]);
      for (const end of ['source', 'target'] as const) {
        const kind = kinds.get(record[end]);
        if (kind === undefined)
          throw conflict(
            index,
            `edge ${JSON.stringify(record.id)}: ${end} node ${JSON.stringify(record[end])} does not exist.`,
          );
        if (kind !== 'node')
          throw conflict(
            index,
            `edge ${JSON.stringify(record.id)}: ${end} ${JSON.stringify(record[end])} is an edge, not a node.`,
          );
      }
    }
    const row = record.kind === 'node' ? await upsertNode(tx, store, record) : await upsertEdge(tx, store, record);
    if (row === undefined) {
      throw conflict(
        index,
        `${JSON.stringify(record.id)} is ${record.kind === 'node' ? 'an edge' : 'a node'}; an element cannot change kind (delete it first).`,
      );
    }
    written.set(row.id, elementRecord(row));
    deleted.delete(row.id);
    counts[record.kind === 'node' ? 'nodes_upserted' : 'edges_upserted'] += 1;
  }
  return { elements: [...written.values()], deleted: [...deleted], counts };
}

/**
 * Applies `mutations` to the session's graph (applyMutations), all of them or (when one is
 * refused and the caller's transaction rolls back) none. Ceilings are checked first
 * (`graph_mutation_too_large`, `graph_element_too_large`, each with `{id, value}`); then the
 * session row is locked (404 `not_found` when gone, 409 `conflict` while `deleting`), which
 * serialises writers of one graph. A call that grows the graph past `ceilings.stored` is 409
 * `conflict` (configuration, not a catalog limit: no `limit` object). Appends one `graph.mutated`
 * session event with the counts, in the same transaction.
 */
export async function mutateGraph(
  tx: Tx,
  sessionId: string,
  mutations: readonly GraphMutation[],
  ceilings: SessionGraphCeilings,
  origin: MutationOrigin = {},
): Promise<MutationOutcome> {
  checkCeilings(mutations, ceilings);
  const status = await lockSessionForGraph(tx, sessionId);
  if (status === undefined) throw new ServiceError('not_found', 'No such session.');
  if (status !== 'active') throw new ServiceError('conflict', 'The session is being deleted.');
  // The session lock is held: the counts before and after are this call's alone.
  const before = await sessionGraphUsage(tx, sessionId);
  const { elements, deleted, counts } = await applyMutations(tx, sessionGraphStore(sessionId), mutations);
  checkSessionGraphBounds(before, await sessionGraphUsage(tx, sessionId), ceilings.stored);
  await appendSessionEvent(tx, {
    sessionId,
    kind: 'graph.mutated',
    executionId: origin.executionId ?? null,
    node: origin.node ?? null,
    attributes: { mutations: mutations.length, ...counts },
  });
  return { elements, deleted };
}

/**
 * Applies `mutations` to a graph blob revision's graph (`mutate_graph`), under the same ceilings
 * and rules as a session graph; the revision row's lock serialises its writers.
 */
export async function mutateRevisionGraph(
  tx: Tx,
  revisionId: string,
  mutations: readonly GraphMutation[],
  ceilings: GraphMutationCeilings,
): Promise<MutationOutcome> {
  checkCeilings(mutations, ceilings);
  const { rowCount } = await tx.query('SELECT 1 FROM revisions WHERE id = $1::uuid FOR NO KEY UPDATE', [revisionId]);
  if (!rowCount) throw new ServiceError('not_found', 'No such revision.');
  const { elements, deleted } = await applyMutations(tx, revisionGraphStore(revisionId), mutations);
  return { elements, deleted };
}
