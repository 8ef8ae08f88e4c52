/**
 * An execution's events folded into what its graph shows: each node's state, its runs (start,
 * end, duration, route or error, logs, input and output) and the routes taken (docs/architecture.md, "Execution
 * events").
 */
import type { EventRecord } from '../../../client/src/index.ts';
import type { CutValue } from '../ui/long-value.tsx';
import type { GraphSpec, NodeState } from './workflow-graph.ts';

export interface NodeRun {
  startedAt: string;
  endedAt: string | null;
  durationMs: number | null;
  route: string | null;
  error: { code: string; message: string; limit?: { id: string; value: unknown; held?: number } } | null;
  logs: Array<{ level: string; message: string }>;
  /** The run's input and output as its ending event keeps them: whole, or cut (`…_preview`, `…_bytes`). */
  input: RunValue;
  output: RunValue;
}

/** A run's input or output: not known (yet), whole, or the part the service kept. */
export type RunValue = { kind: 'none' } | { kind: 'whole'; value: unknown } | ({ kind: 'cut' } & CutValue);

const NONE: RunValue = { kind: 'none' };

/** `input` or `output` of an ending event's attributes (docs/architecture.md, "Execution events"). */
function valueOf(attributes: Record<string, unknown>, name: 'input' | 'output'): RunValue {
  if (Object.hasOwn(attributes, name)) return { kind: 'whole', value: attributes[name] };
  const preview = attributes[`${name}_preview`];
  const bytes = attributes[`${name}_bytes`];
  if (typeof preview === 'string' && typeof bytes === 'number') return { kind: 'cut', preview, bytes };
  return NONE;
}

export interface ExecutionView {
  states: Record<string, NodeState>;
  runs: Record<string, NodeRun[]>;
  taken: Set<string>;
  /** The node whose run ended the execution, if it ended by a route to nowhere. */
  lastNode: string | null;
}

/**
 * The fold of an execution's events, taken in as they arrive: each event is applied once, so a
 * page following a long execution does work per new event, not per event so far on every render.
 */
export class ExecutionFold {
  readonly #states: Record<string, NodeState> = {};
  readonly #runs: Record<string, NodeRun[]> = {};
  readonly #taken = new Set<string>();
  #lastNode: string | null = null;
  /** How many events of the list have been applied. */
  applied = 0;
  /** Whether `execution.finished` was among them. */
  finished = false;

  /** Applies `events[this.applied..]` (the list only grows). */
  take(events: readonly EventRecord[]): void {
    for (; this.applied < events.length; this.applied++) this.#apply(events[this.applied]!);
  }

  /** What the page shows now: fresh state and route objects (a render compares them), the runs as kept. */
  view(graph: GraphSpec | null, ended: boolean): ExecutionView {
    const states: Record<string, NodeState> = { ...this.#states };
    for (const name of Object.keys(graph?.nodes ?? {})) states[name] ??= ended ? 'skipped' : 'queued';
    return { states, runs: this.#runs, taken: new Set(this.#taken), lastNode: this.#lastNode };
  }

  #apply(event: EventRecord): void {
    if (event.kind === 'execution.finished') this.finished = true;
    const node = event.node;
    if (!node) return;
    const attributes = event.attributes as Record<string, unknown>;
    const list = (this.#runs[node] ??= []);
    const open = list.at(-1);
    switch (event.kind) {
      case 'node.started':
        list.push({
          startedAt: event.at,
          endedAt: null,
          durationMs: null,
          route: null,
          error: null,
          logs: [],
          input: NONE,
          output: NONE,
        });
        this.#states[node] = 'running';
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
          open.input = valueOf(attributes, 'input');
          open.output = valueOf(attributes, 'output');
        }
        this.#states[node] = failed ? 'failed' : 'succeeded';
        const route = failed ? 'failure' : (attributes.route as string | undefined);
        if (route) this.#taken.add(`${node}:${route}`);
        this.#lastNode = node;
        break;
      }
      case 'flow.error':
        this.#states[node] = 'failed';
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
}
