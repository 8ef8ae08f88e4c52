import type { Queryable } from '../db/db.ts';
import { ServiceError } from '../errors.ts';

/**
 * What one session's graph may hold beyond the limits catalog (docs/operations.md, "What one
 * tenant can do to the others"): the catalog bounds each mutation call
 * (`workflow.graph_mutations_per_call`, `workflow.graph_element_bytes`), not what a session
 * accumulates. These bounds are the service's configuration (GRAPH_ELEMENTS_PER_SESSION,
 * GRAPH_BYTES_PER_SESSION), the same for every account; 0 turns one off.
 */
export interface SessionGraphBounds {
  /** Elements (nodes and edges) one session's graph may hold. */
  elements: number;
  /** Bytes of those elements as stored text (id, label, properties). */
  bytes: number;
}

/** GRAPH_ELEMENTS_PER_SESSION and GRAPH_BYTES_PER_SESSION when unset (shared/config.ts). */
export const DEFAULT_SESSION_GRAPH_BOUNDS: SessionGraphBounds = { elements: 100_000, bytes: 64 * 1024 * 1024 };

/** The session graph bounds of the configuration's storage bounds (Config['storage']). */
export function sessionGraphBounds(storage: {
  graphElementsPerSession: number;
  graphBytesPerSession: number;
}): SessionGraphBounds {
  return { elements: storage.graphElementsPerSession, bytes: storage.graphBytesPerSession };
}

interface SessionGraphUsage {
  elements: number;
  bytes: number;
}

/**
 * The session graph's counts as this transaction sees them (its own writes included), kept by
 * migration 040's triggers; zeros before the first element.
 */
export async function sessionGraphUsage(q: Queryable, sessionId: string): Promise<SessionGraphUsage> {
  const { rows } = await q.query<{ elements: string; element_bytes: string }>(
    'SELECT elements, element_bytes FROM session_graph_usage WHERE session_id = $1::uuid',
    [sessionId],
  );
  const row = rows[0];
  return row === undefined
    ? { elements: 0, bytes: 0 }
    : { elements: Number(row.elements), bytes: Number(row.element_bytes) };
}

function past(count: number, bound: number): boolean {
  return bound > 0 && count > bound;
}

/**
 * After a session graph's mutations: 409 `conflict` when the call grew the graph's elements or
 * their bytes past the bounds (the caller's transaction then rolls the call back whole). A call
 * that grows neither (deletes, smaller replacements) always passes, so a graph over its bound —
 * one kept from before the bound, or under a lowered one — can be trimmed.
 */
export function checkSessionGraphBounds(
  before: SessionGraphUsage,
  after: SessionGraphUsage,
  bounds: SessionGraphBounds,
): void {
  if (after.elements > before.elements && past(after.elements, bounds.elements))
    throw full(`${bounds.elements} graph elements`, 'GRAPH_ELEMENTS_PER_SESSION');
  if (after.bytes > before.bytes && past(after.bytes, bounds.bytes))
    throw full(`${bounds.bytes} bytes of graph elements`, 'GRAPH_BYTES_PER_SESSION');
}

function full(what: string, setting: string): ServiceError {
  return new ServiceError(
    'conflict',
    `The session graph would hold more than ${what}, the most the service keeps in one session (${setting}); nothing was written.`,
  );
}
