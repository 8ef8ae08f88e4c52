/**
 * What crosses between the runner's main thread and its code worker threads (runner/code-pool.ts,
 * runner/code-worker.ts). Everything is plain data (structured clone). Errors cross as
 * `{code, message}`; match on `code`.
 */
import { z } from 'zod';
import type { CodeRequest, CodeResult, LogLevel } from '../sandbox/messages.ts';

/** Who a `logic.code` run works for: what the worker's HostApi needs to write on the session's behalf. */
export interface CodeScope {
  executionId: string;
  sessionId: string;
  /** The session's blob, whose fixed ceilings bound thread posts and graph calls. */
  blobId: string;
  node: string;
  /**
   * `workflow.session_objects_per_session` as the execution resolved it at creation: ctx.objects.put
   * is checked against this value, not the one in force (specification: Limits during a run).
   */
  sessionObjectsQuota: number;
}

/** One `logic.code` node run, posted to a worker. */
export interface CodeTask {
  request: CodeRequest;
  scope: CodeScope;
}

/** One `ctx.log` / `console` entry kept for the node's events. */
export interface NodeLog {
  level: LogLevel;
  message: string;
}

/** A worker's answer to a CodeTask. */
export interface CodeTaskResult {
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

/** Configuration of every code worker (piscina `workerData`). */
export interface CodeWorkerData {
  databaseUrl: string;
  /** Isolates per worker thread: also the runs one thread serves at once. */
  isolates: number;
  /** Heap bound of each isolate in MiB. */
  memoryMb: number;
  /** The pool's BroadcastChannel, on which the runner posts `CodePoolSignal`s to every worker. */
  channel: string;
}

/**
 * What the runner broadcasts to all its code workers: `close` before the threads are terminated,
 * so each disposes its isolates first (a thread terminated under a running isolate can abort the
 * whole process in isolated-vm's cleanup).
 */
export interface CodePoolSignal {
  type: 'close';
}

/**
 * Messages a worker posts on its own (outside task answers): its isolate pool can no longer
 * promise a clean process (the runner must drain and exit), or a host call failed in a way the
 * code saw only as `internal_error` (logged by the runner).
 */
export const workerNoticeSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('degraded'), reason: z.string() }),
  z.strictObject({ type: z.literal('host_error'), message: z.string() }),
]);

export type WorkerNotice = z.output<typeof workerNoticeSchema>;

/** Runs `logic.code` tasks somewhere else than the calling thread (the piscina pool in production). */
export interface CodeRunner {
  run(task: CodeTask): Promise<CodeTaskResult>;
}
