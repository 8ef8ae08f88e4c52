/**
 * What crosses between the runner's main thread and its engine worker threads
 * (runner/engine/thread-pool.ts, runner/engine/engine-thread.ts). Everything is plain data
 * (structured clone). Errors cross as `{code, message}`; match on `code`.
 */
import { z } from 'zod';
import type { CodeRequest, CodeResult, LogLevel } from '../sandbox/messages.ts';
import type { ContextScope } from '../sandbox/isolate-pool.ts';
import type { MemoryBoundPlan } from '../sandbox/memory-bound.ts';
import type { ClaimedExecution } from './engine/claim.ts';
import type { TracingSettings } from '../shared/config.ts';
import type { OutsideSettings } from './outside/outside-calls.ts';
import type { SessionGraphBounds } from '../shared/graph/session-graph-usage.ts';

/** Who a `logic.code` run works for: what the worker's HostApi needs to write on the session's behalf. */
export interface CodeScope {
  executionId: string;
  sessionId: string;
  /** The session's blob, whose fixed ceilings bound thread posts and graph calls. */
  blobId: string;
  /** The session's organization: whose egress allow-list, concurrency bound and credentials apply. */
  orgId: string;
  node: string;
  /**
   * `workflow.session_objects_per_session` as the execution resolved it at creation: ctx.objects.put
   * is checked against this value, not the one in force (docs/workflow.md, "Which limit values apply").
   */
  sessionObjectsQuota: number;
}

/** One `logic.code` node run, posted to a worker (a runner that interprets on its main thread). */
export interface CodeTask {
  type: 'code';
  request: CodeRequest;
  scope: CodeScope;
}

/** A claimed execution, posted to a worker that interprets it until it leaves this runner. */
export interface ExecutionTask {
  type: 'execution';
  execution: ClaimedExecution;
}

/** How a turn of an execution on this runner ended (runner/engine/interpreter.ts). */
export type TurnOutcome = 'ended' | 'parked' | 'handed_back' | 'lost' | 'abandoned';

/** A worker's answer to an ExecutionTask (a database failure rejects the task instead). */
export interface ExecutionTaskResult {
  outcome: TurnOutcome;
  /** When it parked: the time its wake-up job is due (ISO 8601). */
  wakeAt?: string;
}

/** One `ctx.log` / `console` entry kept for the node's events. */
export interface NodeLog {
  level: LogLevel;
  message: string;
}

/** A worker's answer to a CodeTask. */
interface CodeTaskResult {
  result: CodeResult;
  /** The first entries the code logged, each cut to `MAX_NODE_LOG_CHARS`. */
  logs: NodeLog[];
  /** Entries logged past `MAX_NODE_LOGS`, plus those the sandbox itself dropped. */
  logsDropped: number;
}

/** Log entries of one node run kept in its event: the rest are counted, not stored. */
export const MAX_NODE_LOGS = 50;
/** Longest log entry kept in an event, in characters. */
export const MAX_NODE_LOG_CHARS = 1000;

/** Configuration of every engine worker (piscina `workerData`). */
export interface EngineWorkerData {
  databaseUrl: string;
  /** The runner's id: the lease owner every write of the worker is guarded by. */
  runnerId: string;
  leaseSeconds: number;
  /** The poison bound (EngineTuning.maxRecoveries). */
  maxRecoveries: number;
  /** Connections of the worker's pool: its executions' step writes, transactions and ctx calls. */
  connections: number;
  /** Isolates per worker thread: also the runs one thread serves at once. */
  isolates: number;
  /** Heap bound of each isolate in MiB. */
  memoryMb: number;
  /** Whose runs a context serves (sandbox/isolate-pool.ts). */
  contexts: ContextScope;
  /** The pool's BroadcastChannel, on which the runner posts `WorkerSignal`s to every worker. */
  channel: string;
  /**
   * The runner-wide decisions (`RUNNER_FLAG_*`, an Int32Array over it), set before the matching
   * signal is broadcast: a thread still opening when a signal was posted has no channel yet and
   * never receives it, but reads these whenever it asks.
   */
  flags: SharedArrayBuffer;
  /** The sandbox children's memory bound (sandbox/memory-bound.ts), decided once by the runner. */
  memoryBound: MemoryBoundPlan;
  /** Where the worker's spans go (shared/tracing/start-thread-tracing.ts), the runner's service name resolved; null: tracing is off. */
  tracing: WorkerTracingSettings | null;
  /** Outside calls and credentials (runner/outside/); null: `http.request`, `ctx.fetch` and `ctx.credentials` are unavailable. */
  outside: OutsideSettings | null;
  /** What a session graph may hold (GRAPH_ELEMENTS_PER_SESSION, GRAPH_BYTES_PER_SESSION). */
  graphBounds: SessionGraphBounds;
  /** How much of a node run's input and output its event keeps (NODE_RUN_VALUE_BYTES). */
  nodeRunValueBytes: number;
}

/** The runner's tracing settings as its worker threads take them. */
export type WorkerTracingSettings = TracingSettings & { serviceName: string };

/**
 * What the runner broadcasts to all its workers, the cross-thread form of `RunControl`:
 * - `lost`: the lease of these executions is no longer this runner's (cancelled, taken over):
 *   stop working on them.
 * - `drain`: the runner drains: finish each node in flight, then hand its execution back.
 * - `dead`: the runner handed these executions back itself (the drain's grace ran out), or
 *   `all` of them when it was abandoned (a simulated kill): write nothing more for them.
 * - `cooldowns`: the organizations cooled down now, each with the end of its cool-down (epoch ms):
 *   their `logic.code` runs fail at once with `code_cooldown` (shared/sandbox/cooldowns.ts).
 * - `close`: sent before the threads are terminated, so each disposes its isolates first (a thread
 *   terminated under a running isolate can abort the whole process in isolated-vm's cleanup).
 */
/** Index in `EngineWorkerData.flags`: the runner was abandoned (a simulated kill): write nothing more. */
export const RUNNER_FLAG_ABANDONED = 0;
/** …the runner drains: finish each node in flight, then hand its execution back. */
export const RUNNER_FLAG_DRAINING = 1;
/** …the pool is closing: the threads' sandboxes are disposed, and no run's failure from that is persisted. */
export const RUNNER_FLAG_CLOSED = 2;
export const RUNNER_FLAG_COUNT = 3;

export type WorkerSignal =
  | { type: 'lost'; executionIds: string[] }
  | { type: 'cooldowns'; until: Record<string, number> }
  | { type: 'drain' }
  | { type: 'dead'; executionIds: string[] | 'all' }
  | { type: 'close' };

/**
 * Messages a worker posts on its own (outside task answers), for the runner to act on or log: an
 * organization's run made the sandbox lose an isolate thread (a strike:
 * shared/sandbox/cooldowns.ts; the sandbox child process is being replaced); its sandbox's
 * snapshot (every `SNAPSHOT_EVERY_MS`); a sandbox child started, retired or died; a host call
 * failed in a way the code saw only as `internal_error`; a processor threw something that was not
 * a refusal.
 */
/** A worker's sandbox as the ops API shows it (per runner, summed over its worker threads). */
const sandboxSnapshotSchema = z.strictObject({
  isolatesLive: z.number(),
  isolatesBusy: z.number(),
  isolatesIdle: z.number(),
  runsWaiting: z.number(),
  contexts: z.number(),
  /** Since the sandbox child process started: contexts made, runs that found theirs kept, isolates retired for their heap or run count. */
  contextsMade: z.number(),
  contextsReused: z.number(),
  isolatesRecycled: z.number(),
  /** Sandbox children killed past their memory bound (sandbox/memory-bound.ts), since the thread started. */
  memoryKills: z.number(),
  /** Organizations with runs holding or waiting for an isolate, the busiest first (at most `MAX_SNAPSHOT_TENANTS`). */
  tenants: z.array(z.strictObject({ orgId: z.string(), waiting: z.number(), busy: z.number() })),
});

export type SandboxSnapshot = z.output<typeof sandboxSnapshotSchema>;

/** A runner's sandbox for the ops API: its threads' snapshots summed, and how the children's memory is bounded. */
export type RunnerSandboxReport = SandboxSnapshot & {
  memoryBound: { mechanism: string; boundMb: number; detail: string };
};

/** How often each worker posts its sandbox snapshot. */
export const SNAPSHOT_EVERY_MS = 2_000;

/** Organizations listed in a sandbox snapshot. */
export const MAX_SNAPSHOT_TENANTS = 50;

export const workerNoticeSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('strike'), tenant: z.string().nullable(), reason: z.string() }),
  z.strictObject({ type: z.literal('sandbox'), thread: z.number(), snapshot: sandboxSnapshotSchema }),
  // prom-client's getMetricsAsJSON of the thread's engine metrics (runner/metrics.ts).
  z.strictObject({ type: z.literal('metrics'), thread: z.number(), metrics: z.array(z.unknown()) }),
  z.strictObject({ type: z.literal('sandbox_event'), message: z.string(), fields: z.string() }),
  z.strictObject({ type: z.literal('host_error'), message: z.string() }),
  // The execution's id and traceparent, for the runner's log line (`execution_id`, `trace_id`).
  z.strictObject({
    type: z.literal('processor_error'),
    node: z.string(),
    message: z.string(),
    execution_id: z.string(),
    traceparent: z.string().nullable(),
  }),
]);

export type WorkerNotice = z.output<typeof workerNoticeSchema>;

/** Runs `logic.code` tasks somewhere else than the calling thread (the piscina pool in production). */
export interface CodeRunner {
  /** Aborting `signal` stops the run at once (its execution was cancelled or its lease lost). */
  run(task: CodeTask, signal?: AbortSignal): Promise<CodeTaskResult>;
}
