/**
 * An execution's events folded into what its graph shows: each node's state, its runs (start,
 * end, duration, route or error, logs) and the routes taken (docs/architecture.md, "Execution
 * events").
 */
import type { EventRecord } from '../../../client/src/index.ts';
import type { GraphSpec, NodeState } from './workflow-graph.ts';

export interface NodeRun {
  startedAt: string;
  endedAt: string | null;
  durationMs: number | null;
  route: string | null;
  error: { code: string; message: string; limit?: { id: string; value: unknown; held?: number } } | null;
  logs: Array<{ level: string; message: string }>;
}

export interface ExecutionView {
  states: Record<string, NodeState>;
  runs: Record<string, NodeRun[]>;
  taken: Set<string>;
  /** The node whose run ended the execution, if it ended by a route to nowhere. */
  lastNode: string | null;
}

/** Folds `events` (in id order) over `graph`; `ended` turns nodes that never ran `skipped`. */
export function executionView(graph: GraphSpec | null, events: EventRecord[], ended: boolean): ExecutionView {
  const states: Record<string, NodeState> = {};
  const runs: Record<string, NodeRun[]> = {};
  const taken = new Set<string>();
  let lastNode: string | null = null;
  for (const event of events) {
    const node = event.node;
    if (!node) continue;
    const attributes = event.attributes as Record<string, unknown>;
    const list = (runs[node] ??= []);
    const open = list.at(-1);
    switch (event.kind) {
      case 'node.started':
        list.push({ startedAt: event.at, endedAt: null, durationMs: null, route: null, error: null, logs: [] });
        states[node] = 'running';
        break;
      case 'node.finished':
      case 'node.failed': {
        const failed = event.kind === 'node.failed';
        if (open && open.endedAt === null) {
          open.endedAt = event.at;
          open.durationMs = typeof attributes.duration_ms === 'number' ? attributes.duration_ms : null;
          open.route = failed ? 'failure' : typeof attributes.route === 'string' ? attributes.route : null;
          open.error = failed ? (attributes.error as NodeRun['error']) : null;
          open.logs = Array.isArray(attributes.logs) ? (attributes.logs as NodeRun['logs']) : [];
        }
        states[node] = failed ? 'failed' : 'succeeded';
        const route = failed ? 'failure' : (attributes.route as string | undefined);
        if (route) taken.add(`${node}:${route}`);
        lastNode = node;
        break;
      }
      case 'flow.error':
        states[node] = 'failed';
        if (open && open.endedAt === null) {
          open.endedAt = event.at;
          open.error = {
            code: String(attributes.error),
            message: 'A run limit of the execution was passed.',
            limit: attributes.limit as never,
          };
        }
        break;
    }
  }
  for (const name of Object.keys(graph?.nodes ?? {})) states[name] ??= ended ? 'skipped' : 'queued';
  return { states, runs, taken, lastNode };
}
