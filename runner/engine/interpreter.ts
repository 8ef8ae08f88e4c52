/**
 * The workflow interpreter: advances one claimed execution node by node until it ends, parks
 * (logic.sleep), is handed back (drain) or is lost (cancelled, or taken over after this runner's
 * lease expired). Per node:
 *
 *   ceilings → `node.started` (one guarded statement: the run that would pass
 *   `processor_runs_per_execution` or start past the deadline is never counted or started)
 *   → the processor → the outcome, the next state and the node's events (one guarded statement)
 *   → the route.
 *
 * The state persisted after every node run is all a resumption needs, so a runner that dies loses
 * at most the node in flight, which the next holder runs again (at-least-once; docs/architecture.md).
 */
import type { Db, Tx } from '../../shared/db/db.ts';
import { isServiceError, type LimitObject } from '../../shared/errors.ts';
import { defaultOf } from '../../shared/limits/catalog.ts';
import type { JobQueue } from '../../shared/queue/execution-jobs.ts';
import { endExecution, type ExecutionError, type TerminalStatus } from '../../shared/workflow/execution-end.ts';
import type { GraphNode } from '../../shared/workflow/graph.ts';
import { FAILURE, processorByName, SUCCESS } from '../../shared/workflow/processors.ts';
import type { CodeRunner, TurnOutcome } from '../messages.ts';
import type { NodeError, NodeResult, Processor } from '../processors/processor.ts';
import type { ClaimedExecution } from './claim.ts';
import {
  appendEvents,
  handBack,
  lockHeld,
  park,
  whyNotStarted,
  type ExecutionState,
  type Holder,
  type NewExecutionEvent,
} from './persist.ts';
import type { StepWriter } from './step-writes.ts';
import type { OutsideCalls } from '../outside/outside-calls.ts';
import type { SessionGraphBounds } from '../../shared/graph/session-graph-usage.ts';
import { parkForRetry, plannedRetry, retryPolicyOf, withNodeTimeout } from './node-policy.ts';
import { bounded, type TraceSpan, type Tracing } from '../../shared/tracing/tracing.ts';
import { runValue } from '../../shared/workflow/run-values.ts';

/** The services the interpreter works with; one per runner. */
export interface EngineContext {
  db: Db;
  queue: JobQueue;
  runnerId: string;
  /** The per-node writes, batched across this runner's executions. */
  writes: StepWriter;
  processors: ReadonlyMap<string, Processor>;
  code?: CodeRunner | undefined;
  /** Outside calls and credentials of `http.request` nodes; absent: those nodes fail `processor_unavailable`. */
  outside?: OutsideCalls | undefined;
  /** What a session graph may hold (configuration), for `graph.mutate` nodes. */
  graphBounds: SessionGraphBounds;
  /** How much of a node run's input and output its ending event keeps (shared/workflow/run-values.ts). */
  nodeRunValueBytes: number;
  leaseSeconds: number;
  /** Crash recoveries without progress after which an execution ends failed (the poison bound). */
  maxRecoveries: number;
  /** Told when an execution parks, so the runner can look for its wake-up job at `wakeAt`. */
  onParked?: ((wakeAt: Date) => void) | undefined;
  /** Errors a processor threw that were not refusals (shown to the execution as internal_error). */
  onProcessorError?: ((error: unknown, node: string, execution: ClaimedExecution) => void) | undefined;
  /** Spans of the executions (shared/tracing/); null or absent while tracing is off. */
  tracing?: Tracing | null | undefined;
  /** Told of each node run and each execution this runner ended (metrics: shared/metrics.ts). */
  observe?:
    | {
        nodeRun(processor: string, outcome: 'finished' | 'failed', seconds: number): void;
        executionEnded(status: TerminalStatus): void;
      }
    | undefined;
}

/** What the runner tells one execution in flight. */
export interface RunControl {
  /** Aborted when the lease is lost or the runner gives the execution up; processors see it. */
  readonly signal: AbortSignal;
  /** True once the runner drains: finish the node in flight, then hand back. */
  readonly yielding: boolean;
  /** True once the runner was abandoned (a simulated kill): write nothing more. */
  readonly dead: boolean;
}

/** `workflow.sleep_seconds` is fixed: the same for every account, so the catalog's value. */
const SLEEP_SECONDS_LIMIT: LimitObject = { id: 'workflow.sleep_seconds', value: defaultOf('workflow.sleep_seconds') };

function limitOf(
  execution: ClaimedExecution,
  id: 'workflow.processor_runs_per_execution' | 'workflow.execution_seconds',
): LimitObject {
  return { id, value: execution.limits[id] };
}

/** Where `route` of `node` leads: a node name, or null (ends the execution). */
function targetOf(node: GraphNode, route: string): string | null {
  const target = node.routes?.[route];
  return typeof target === 'string' ? target : null;
}

function elapsedMs(since: number): number {
  return Math.round(performance.now() - since);
}

/**
 * Runs `execution` (just claimed by this runner) until it leaves this runner. Throws only for
 * database failures; the caller then gives the execution back counting an attempt (or, if even
 * that fails, lets the lease run out), so it is recovered like after a crash, within the poison
 * bound.
 */
export async function runExecution(
  ctx: EngineContext,
  execution: ClaimedExecution,
  control: RunControl,
): Promise<TurnOutcome> {
  if (!ctx.tracing) return interpret(ctx, execution, control, undefined);
  // One span per turn on a runner (a claim until the execution leaves), child of the span that
  // created the execution: a sleep, a hand-back or a recovery adds a turn to the same trace.
  const turn = ctx.tracing.startSpan('execution', {
    parent: execution.traceparent,
    attributes: {
      'workflow.execution.id': execution.id,
      'workflow.claim.reason': execution.reason,
      'workflow.attempts': execution.attempts,
    },
  });
  try {
    const outcome = await interpret(ctx, execution, control, turn);
    turn.setAttributes({ 'workflow.outcome': outcome });
    turn.end();
    return outcome;
  } catch (error) {
    turn.end('internal_error');
    throw error;
  }
}

/** runExecution's work; `turn` is its span when tracing is on. */
async function interpret(
  ctx: EngineContext,
  execution: ClaimedExecution,
  control: RunControl,
  turn: TraceSpan | undefined,
): Promise<TurnOutcome> {
  const holder: Holder = { executionId: execution.id, runnerId: ctx.runnerId, leaseSeconds: ctx.leaseSeconds };

  if (execution.attempts > ctx.maxRecoveries) {
    const error: ExecutionError = {
      code: 'internal_error',
      message: `gave up after ${ctx.maxRecoveries} recoveries: runners working on this execution stopped ${execution.attempts} times without finishing a node run`,
    };
    return (await end(ctx, holder, [], 'failed', undefined, error)) ? 'ended' : 'lost';
  }

  if (!wellFormed(execution)) {
    const error = { code: 'internal_error', message: "The execution's stored state or limits are malformed." };
    return (await end(ctx, holder, [], 'failed', undefined, error)) ? 'ended' : 'lost';
  }

  let state = execution.state;
  // Set when the statement that claimed the execution, or the one that advanced to this node,
  // already started it.
  let prestarted: boolean | null = execution.prestarted ? true : null;
  for (;;) {
    if (control.dead) return 'abandoned';
    if (control.signal.aborted) return 'lost';
    if (state.node === null) {
      return (await end(ctx, holder, [], 'succeeded', state.input ?? null)) ? 'ended' : 'lost';
    }
    // A node already started is in flight: a draining runner finishes it, then hands back.
    if (control.yielding && prestarted === null) {
      return (await ctx.db.transaction((tx) => handBack(tx, ctx.queue, holder))) ? 'handed_back' : 'lost';
    }
    const name = state.node;
    const node = execution.graph.nodes[name];
    if (node === undefined) {
      // The graph was validated at creation; only a hand-edited row gets here.
      const error = { code: 'internal_error', message: `The execution's graph has no node "${name}".` };
      return (await end(ctx, holder, [], 'failed', undefined, error)) ? 'ended' : 'lost';
    }

    const running =
      prestarted ??
      (await ctx.writes.start({ executionId: execution.id, node: name, processor: node.processor })) !== null;
    prestarted = null;
    if (!running) {
      const why = await whyNotStarted(ctx.db, holder);
      if (why === 'lost') return 'lost';
      if (control.dead) return 'abandoned';
      const limit =
        why === 'processor_runs'
          ? limitOf(execution, 'workflow.processor_runs_per_execution')
          : limitOf(execution, 'workflow.execution_seconds');
      const message =
        why === 'processor_runs'
          ? `The execution reached workflow.processor_runs_per_execution (${String(limit.value)} node runs); node "${name}" was not started.`
          : `The execution ran past workflow.execution_seconds (${String(limit.value)} s); node "${name}" was not started.`;
      return (await flowError(ctx, holder, name, limit, message)) ? 'ended' : 'lost';
    }

    const started = performance.now();
    // A span per node run: ids, the processor and how it ended; never its input or output.
    const span =
      turn &&
      ctx.tracing?.startSpan(`node ${bounded(node.processor)}`, {
        parent: turn.traceparent,
        attributes: {
          'workflow.execution.id': execution.id,
          'workflow.node.id': bounded(name),
          'workflow.processor': bounded(node.processor),
        },
      });
    const result = await runNode(ctx, execution, name, node, state.input, control);
    if (span) {
      span.setAttributes(
        result.kind === 'route'
          ? { 'workflow.node.status': 'finished', 'workflow.node.route': bounded(result.route) }
          : { 'workflow.node.status': result.kind === 'sleep' ? 'sleeping' : 'failed' },
      );
      span.end(result.kind === 'failure' ? bounded(result.error.code) : undefined);
    }
    if (control.dead) return 'abandoned';
    const duration_ms = elapsedMs(started);
    ctx.observe?.nodeRun(
      node.processor,
      result.kind === 'failure' ? 'failed' : 'finished',
      (performance.now() - started) / 1000,
    );

    if (result.kind === 'sleep') {
      const next: ExecutionState = { node: targetOf(node, SUCCESS), input: result.output };
      const finished: NewExecutionEvent = {
        kind: 'node.finished',
        node: name,
        attributes: {
          route: SUCCESS,
          duration_ms,
          ...runValue('input', state.input, ctx.nodeRunValueBytes),
          ...runValue('output', result.output, ctx.nodeRunValueBytes),
        },
      };
      if (result.seconds > (SLEEP_SECONDS_LIMIT.value as number)) {
        const message = `logic.sleep of ${result.seconds} s in node "${name}" is longer than workflow.sleep_seconds (${String(SLEEP_SECONDS_LIMIT.value)} s).`;
        return (await flowError(ctx, holder, name, SLEEP_SECONDS_LIMIT, message)) ? 'ended' : 'lost';
      }
      if (result.seconds === 0) {
        if (
          !(
            await ctx.writes.advance({
              executionId: execution.id,
              state: next,
              events: [finished],
              startProcessor: null,
            })
          ).owned
        )
          return 'lost';
        state = next;
        continue;
      }
      return sleep(ctx, execution, holder, name, next, finished, result.seconds);
    }

    const events: NewExecutionEvent[] = [];
    let next: ExecutionState;
    let endAs: { status: TerminalStatus; output?: unknown; error?: ExecutionError } | null = null;
    if (result.kind === 'route') {
      events.push({
        kind: 'node.finished',
        node: name,
        attributes: {
          ...result.attributes,
          route: result.route,
          duration_ms,
          ...runValue('input', state.input, ctx.nodeRunValueBytes),
          ...runValue('output', result.output, ctx.nodeRunValueBytes),
        },
      });
      const target = targetOf(node, result.route);
      next = { node: target, input: result.output };
      if (target === null) {
        endAs =
          result.route === FAILURE
            ? {
                status: 'failed',
                error: {
                  code: 'failure_route',
                  message: `Node "${name}" took the failure route, which leads nowhere.`,
                },
              }
            : { status: 'succeeded', output: result.output };
      }
    } else {
      // Under a retry policy every attempt's node.failed says which attempt it was.
      const attempt = retryPolicyOf(node) === null ? {} : { attempt: state.attempt ?? 1 };
      const failed: NewExecutionEvent = {
        kind: 'node.failed',
        node: name,
        attributes: {
          ...result.attributes,
          error: result.error,
          ...attempt,
          duration_ms,
          ...runValue('input', state.input, ctx.nodeRunValueBytes),
        },
      };
      const retry = plannedRetry(node, state, result.error);
      if (retry !== null) {
        const parked = await parkForRetry(ctx.db, ctx.queue, holder, name, state, failed, retry);
        if (parked === 'lost') return 'lost';
        if (parked instanceof Date) {
          ctx.onParked?.(parked);
          return 'parked';
        }
        // The wait would end past the deadline: this failure stands, and says why it was not retried.
        failed.attributes = { ...failed.attributes, retry_skipped: 'deadline' };
      }
      events.push(failed);
      const target = targetOf(node, FAILURE);
      // The failure route's node gets what failed and on what input (docs/architecture.md).
      next = { node: target, input: { error: result.error, input: state.input } };
      if (target === null) endAs = { status: 'failed', error: result.error };
    }

    if (endAs) return (await end(ctx, holder, events, endAs.status, endAs.output, endAs.error)) ? 'ended' : 'lost';
    const nextNode = next.node === null ? undefined : execution.graph.nodes[next.node];
    // The usual step records this outcome and starts the next node in one statement.
    const startProcessor = nextNode !== undefined && !control.yielding ? nextNode.processor : null;
    const advanced = await ctx.writes.advance({ executionId: execution.id, state: next, events, startProcessor });
    if (!advanced.owned) return 'lost';
    if (startProcessor !== null) prestarted = advanced.runs !== null;
    state = next;
  }
}

/** The row as create_execution writes it: a state naming the next node (or null) and the five run limits. */
function wellFormed(execution: ClaimedExecution): boolean {
  const { state, limits, graph } = execution;
  const number = (value: unknown) => typeof value === 'number' && Number.isFinite(value);
  return (
    typeof state === 'object' &&
    state !== null &&
    Object.hasOwn(state, 'node') &&
    (state.node === null || typeof state.node === 'string') &&
    typeof graph === 'object' &&
    graph !== null &&
    typeof graph.nodes === 'object' &&
    graph.nodes !== null &&
    typeof limits === 'object' &&
    limits !== null &&
    number(limits['workflow.processor_runs_per_execution']) &&
    number(limits['workflow.execution_seconds']) &&
    number(limits['workflow.code_run_seconds']) &&
    number(limits['workflow.session_objects_per_session']) &&
    Array.isArray(limits['workflow.code_imports'])
  );
}

/** Runs one node's processor; every way it can end becomes a NodeResult. */
async function runNode(
  ctx: EngineContext,
  execution: ClaimedExecution,
  name: string,
  node: GraphNode,
  input: unknown,
  control: RunControl,
): Promise<NodeResult> {
  const processor = ctx.processors.get(node.processor);
  const spec = processorByName(node.processor);
  if (!processor || !spec) {
    return {
      kind: 'failure',
      error: { code: 'processor_unavailable', message: `This runner cannot run processor "${node.processor}".` },
    };
  }
  const config = spec.config.safeParse(node.config ?? {});
  if (!config.success) {
    return {
      kind: 'failure',
      error: {
        code: 'invalid_config',
        message: `The config of node "${name}" does not fit ${node.processor}: ${config.error.issues[0]?.message ?? 'invalid'}.`,
      },
    };
  }
  return withNodeTimeout(name, node, control.signal, (signal) =>
    runProcessor(ctx, execution, name, node, processor, config.data, input, signal),
  );
}

/** One call of the processor; a throw becomes the node's failure (a refusal as data, else internal_error). */
async function runProcessor(
  ctx: EngineContext,
  execution: ClaimedExecution,
  name: string,
  node: GraphNode,
  processor: Processor,
  config: unknown,
  input: unknown,
  signal: AbortSignal,
): Promise<NodeResult> {
  try {
    return await processor.run(
      {
        db: ctx.db,
        execution: {
          id: execution.id,
          sessionId: execution.session_id,
          orgId: execution.org_id,
          blobId: execution.blob_id,
          revisionId: execution.revision_id,
          limits: execution.limits,
        },
        node: name,
        signal,
        code: ctx.code,
        ...(ctx.outside ? { outside: ctx.outside } : {}),
        graphBounds: ctx.graphBounds,
      },
      config,
      input,
    );
  } catch (error) {
    if (isServiceError(error)) {
      const failure: NodeError = { code: error.code, message: error.message };
      if (error.extras.limit) failure.limit = error.extras.limit;
      return { kind: 'failure', error: failure };
    }
    ctx.onProcessorError?.(error, name, execution);
    return {
      kind: 'failure',
      error: { code: 'internal_error', message: `Processor ${node.processor} failed unexpectedly.` },
    };
  }
}

/**
 * A `logic.sleep` of `seconds` > 0: fails the execution at once when it would end past the
 * deadline, else parks it (status `sleeping`, the lease released, a delayed wake-up job).
 */
async function sleep(
  ctx: EngineContext,
  execution: ClaimedExecution,
  holder: Holder,
  name: string,
  next: ExecutionState,
  finished: NewExecutionEvent,
  seconds: number,
): Promise<TurnOutcome> {
  const limit = limitOf(execution, 'workflow.execution_seconds');
  const outcome = await ctx.db.transaction(async (tx): Promise<TurnOutcome | Date> => {
    const row = await lockHeld(tx, holder);
    if (!row) return 'lost';
    if (seconds > row.seconds_left) {
      const message = `logic.sleep of ${seconds} s in node "${name}" would end past the execution's deadline (workflow.execution_seconds is ${String(limit.value)} s).`;
      await failWithLimit(tx, holder, row.session_id, name, limit, message);
      return 'ended';
    }
    const wakeAt = await park(tx, ctx.queue, holder, next, seconds);
    if (!wakeAt) return 'lost';
    await appendEvents(tx, holder.executionId, row.session_id, [
      finished,
      { kind: 'execution.sleeping', node: name, attributes: { seconds, wake_at: wakeAt.toISOString() } },
    ]);
    return wakeAt;
  });
  if (outcome instanceof Date) {
    ctx.onParked?.(outcome);
    return 'parked';
  }
  return outcome;
}

/** Appends `flow.error` and ends the execution failed with `limit_exceeded`, inside `tx`. */
async function failWithLimit(
  tx: Tx,
  holder: Holder,
  sessionId: string,
  node: string,
  limit: LimitObject,
  message: string,
): Promise<boolean> {
  await appendEvents(tx, holder.executionId, sessionId, [
    { kind: 'flow.error', node, attributes: { error: 'limit_exceeded', limit } },
  ]);
  return endExecution(tx, {
    executionId: holder.executionId,
    status: 'failed',
    error: { code: 'limit_exceeded', message, limit },
    guard: { leaseOwner: holder.runnerId },
  });
}

/** A run ceiling stopped the execution: `flow.error`, then failed; no failure route applies. */
async function flowError(
  ctx: EngineContext,
  holder: Holder,
  node: string,
  limit: LimitObject,
  message: string,
): Promise<boolean> {
  return ctx.db.transaction(async (tx) => {
    const row = await lockHeld(tx, holder);
    if (!row) return false;
    return failWithLimit(tx, holder, row.session_id, node, limit, message);
  });
}

/** Appends the last node's events and ends the execution, if this runner still holds it. */
async function end(
  ctx: EngineContext,
  holder: Holder,
  events: readonly NewExecutionEvent[],
  status: TerminalStatus,
  output?: unknown,
  error?: ExecutionError,
): Promise<boolean> {
  const ended = await ctx.writes.end({ executionId: holder.executionId, status, output, error: error ?? null, events });
  if (ended) ctx.observe?.executionEnded(status);
  return ended;
}
