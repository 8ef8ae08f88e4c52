/**
 * A code worker thread of the runner's piscina pool (runner/code-pool.ts). Each thread owns an
 * isolate pool (sandbox/) of `isolates` isolates, which is also how many `logic.code` runs it
 * serves at once, and a pg pool of its own (at most 2 connections) for the runs' ctx calls: the
 * HostApi holds functions, so it must live in the thread that runs the isolate.
 *
 * The pools are created on the first task, not at import. When the isolate pool degrades (an
 * isolate thread was lost: docs/sandbox.md) the worker tells the runner, which drains and exits.
 */
import { BroadcastChannel, parentPort, workerData } from 'node:worker_threads';
import { createDb, type Db } from '../shared/db/db.ts';
import { IsolatePool } from '../sandbox/isolate-pool.ts';
import { runCode } from '../sandbox/sandbox.ts';
import { createLogSink, sessionHost } from './code-host.ts';
import type { CodePoolSignal, CodeTask, CodeTaskResult, CodeWorkerData, WorkerNotice } from './messages.ts';

interface WorkerState {
  db: Db;
  isolates: IsolatePool;
  channel: BroadcastChannel;
}

let state: WorkerState | undefined;

function notify(notice: WorkerNotice): void {
  parentPort?.postMessage(notice);
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function open(): WorkerState {
  const data = workerData as CodeWorkerData;
  const db = createDb({ connectionString: data.databaseUrl, max: 2, applicationName: 'workspace-runner-code' });
  const isolates = new IsolatePool({
    size: data.isolates,
    memoryMb: data.memoryMb,
    onDegraded: (reason) => notify({ type: 'degraded', reason }),
  });
  // Before the runner terminates this thread it asks every worker to stop its isolates: runs in
  // progress end at once (internal_error) and no isolate thread outlives its environment.
  const channel = new BroadcastChannel(data.channel);
  channel.unref();
  channel.onmessage = (event) => {
    if ((event as { data?: Partial<CodePoolSignal> }).data?.type !== 'close') return;
    channel.close();
    void isolates.dispose();
  };
  return { db, isolates, channel };
}

/** Runs one `logic.code` node (piscina's task handler). Never rejects for anything the code does. */
export default async function runCodeTask(task: CodeTask): Promise<CodeTaskResult> {
  state ??= open();
  const logs = createLogSink();
  const host = sessionHost(state.db, task.scope, logs, (error) => notify({ type: 'host_error', message: describe(error) }));
  const result = await runCode(state.isolates, task.request, host);
  return { result, logs: logs.entries, logsDropped: logs.dropped + result.stats.logsDropped };
}
