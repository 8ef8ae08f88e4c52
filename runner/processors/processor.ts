import type { Db } from '../../shared/db/db.ts';
import type { LimitObject } from '../../shared/errors.ts';
import type { RunLimits } from '../../shared/workflow/run-limits.ts';
import type { CodeRunner } from '../messages.ts';
import type { OutsideCalls } from '../outside/outside-calls.ts';
import type { SessionGraphBounds } from '../../shared/graph/session-graph-usage.ts';

export type { RunLimits } from '../../shared/workflow/run-limits.ts';

/** What a processor knows of the execution it runs in. */
export interface ExecutionScope {
  id: string;
  sessionId: string;
  orgId: string;
  /** The session's blob: limits of the work come from here, not from the definition's blob. */
  blobId: string;
  revisionId: string;
  limits: RunLimits;
}

/** Everything one node run gets besides its config and input. */
export interface RunContext {
  db: Db;
  execution: ExecutionScope;
  /** The node's name in the graph. */
  node: string;
  /** Aborted when the runner drains or loses the execution's lease. */
  signal: AbortSignal;
  /** Where `logic.code` runs its sandbox (the runner's worker threads); absent where no code may run. */
  code?: CodeRunner;
  /** Outside calls and stored credentials (`http.request`); absent where no call may leave. */
  outside?: OutsideCalls;
  /** What a session graph may hold (GRAPH_ELEMENTS_PER_SESSION, GRAPH_BYTES_PER_SESSION). */
  graphBounds: SessionGraphBounds;
}

/** An error a node run ends with (crosses thread boundaries as plain data). */
export interface NodeError {
  code: string;
  message: string;
  limit?: LimitObject;
}

/**
 * How a node run ended: take a route with an output, fail (the `failure` route, if any, gets
 * `{error, input}`), or park the execution for `seconds` and continue on `success` with `output`.
 */
export type NodeResult =
  | { kind: 'route'; route: string; output: unknown; attributes?: NodeEventAttributes }
  | { kind: 'failure'; error: NodeError; attributes?: NodeEventAttributes }
  | { kind: 'sleep'; seconds: number; output: unknown };

/**
 * Extra attributes a processor adds to its node's `node.finished` / `node.failed` event (e.g. the
 * logs of a `logic.code` run). Kept small: events are read back page by page.
 */
export type NodeEventAttributes = Record<string, unknown>;

/**
 * One processor: `run` receives a config already validated by the processor's schema in
 * shared/workflow/processors.ts. Side effects are at-least-once: a runner that dies after them but
 * before the node's result is persisted runs the node again.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the registry holds processors of every config type
export interface Processor<C = any> {
  readonly name: string;
  run(ctx: RunContext, config: C, input: unknown): Promise<NodeResult>;
}
