import { createHash } from 'node:crypto';
import type { SendOptions } from 'pg-boss';
import type { Tx } from '../db/db.ts';
import { preparedQuery } from '../db/prepared-query.ts';
import { QUEUES } from './queues.ts';

/**
 * What sends jobs: a started pg-boss instance, or in a test a stand-in. Narrow on purpose, so the
 * control plane depends on sending and nothing else.
 */
export interface JobQueue {
  send(name: string, data?: object | null, options?: SendOptions | null): Promise<string | null>;
}

/**
 * NOTIFY channel on which a create announces its execution's id at commit (the create statement's
 * `pg_notify`, shared/workflow/create-execution.ts), so an idle runner claims it at once instead of
 * first fetching its wake-up job (runner/engine/work-loop.ts, "announced"). The job is sent all the
 * same, with the execution's id as its own id: the runner that claims from the announcement
 * completes it in the claim's statement, and a runner that missed the announcement fetches it.
 */
export const EXECUTION_CREATED_CHANNEL = 'ws_execution_created';

/** Data of an `executions` job: a wake-up naming the execution; the state lives in its row. */
export interface ExecutionJobData {
  execution_id: string;
}

export interface EnqueueOptions {
  /** Deliver no earlier than this (a Date, or seconds from now): the wake-up of a sleep. */
  startAfter?: Date | number;
  /** pg-boss priority (higher first): `fairPriority` for a create's wake-up, else 0. */
  priority?: number;
  /**
   * The create's wake-up, announced on `EXECUTION_CREATED_CHANNEL`: the job's id is the execution's,
   * so a runner claiming from the announcement can complete it knowing only the execution.
   */
  announced?: boolean;
}

/**
 * Fair queueing of the organizations' first wake-ups (docs/architecture.md, "Fairness between organizations"): pg-boss
 * fetches by `priority DESC, created_on` (its index job_i11 holds that order), and a create's
 * wake-up gets minus the number of its organization's executions already unfinished ahead of it.
 * That number is the execution's virtual start time in start-time fair queueing: the k-th
 * unfinished execution of every organization is fetched before any organization's (k+1)-th, so
 * one organization's backlog of 100,000 delays another's first execution by at most one fetch,
 * on any number of runners. Wake-ups of executions already started (sleeps, hand-backs, recovery)
 * keep priority 0: they are work in progress.
 */
export function fairPriority(orgInFlight: number | undefined): number {
  if (orgInFlight === undefined || !Number.isFinite(orgInFlight) || orgInFlight <= 1) return 0;
  return -Math.min(orgInFlight - 1, 2_000_000_000);
}

// pg-boss's insert is one long constant text per queue; sent unnamed, PostgreSQL parsed and planned
// it on every send (about 0.2 ms of planning alone). Named after its own hash, it is prepared once
// per connection, and a different text (another queue, another pg-boss version) gets another name.
function statementName(text: string): string {
  return `pgboss_send_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
}

/** pg-boss's `db` option on the caller's transaction, its statements prepared by name. */
export function inTransaction(tx: Tx) {
  return {
    executeSql: (text: string, values?: unknown[]) => preparedQuery(tx, statementName(text), text, values ?? []),
  };
}

/**
 * Sends an execution's wake-up job through the caller's transaction (pg-boss `db` option), so the
 * job commits or rolls back with the row change it announces: no execution without its job, and
 * no job for an execution that was never written. Returns the job id.
 */
export async function enqueueExecution(
  queue: JobQueue,
  tx: Tx,
  executionId: string,
  options: EnqueueOptions = {},
): Promise<string> {
  const data: ExecutionJobData = { execution_id: executionId };
  const sendOptions: SendOptions = { db: inTransaction(tx) };
  if (options.startAfter !== undefined) sendOptions.startAfter = options.startAfter;
  if (options.priority) sendOptions.priority = options.priority;
  if (options.announced) sendOptions.id = executionId;
  const jobId = await queue.send(QUEUES.executions.name, data, sendOptions);
  // pg-boss answers null only for a throttled or singleton send, which this queue never uses.
  if (jobId === null) throw new Error(`pg-boss did not create the job of execution ${executionId}`);
  return jobId;
}

/** A queue that can also insert many jobs in one statement (pg-boss `insert`). */
export interface BatchJobQueue extends JobQueue {
  insert?(
    name: string,
    jobs: Array<{ id?: string; data: object; priority?: number; startAfter?: Date }>,
    options: { db: { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> } },
  ): Promise<string[] | null>;
}

/**
 * Sends the wake-up jobs of several executions through the caller's transaction: one pg-boss
 * `insert` statement when the queue has it, else one `send` each. Same guarantee as
 * `enqueueExecution`: the jobs commit or roll back with the rows they announce.
 */
export async function enqueueExecutions(
  queue: BatchJobQueue,
  tx: Tx,
  executions: ReadonlyArray<{ id: string; orgInFlight?: number | undefined }>,
  options: { announced?: boolean } = {},
): Promise<void> {
  if (executions.length === 0) return;
  const announced = options.announced === true;
  if (executions.length === 1 || !queue.insert) {
    for (const execution of executions)
      await enqueueExecution(queue, tx, execution.id, { priority: fairPriority(execution.orgInFlight), announced });
    return;
  }
  const jobs = executions.map((execution) => ({
    ...(announced ? { id: execution.id } : {}),
    data: { execution_id: execution.id },
    priority: fairPriority(execution.orgInFlight),
  }));
  await queue.insert(QUEUES.executions.name, jobs, { db: inTransaction(tx) });
}
