import type { SendOptions } from 'pg-boss';
import type { Tx } from '../db/db.ts';
import { inTransaction, type BatchJobQueue, type JobQueue } from '../queue/execution-jobs.ts';
import { QUEUES } from '../queue/queues.ts';

/**
 * Data of a `schedule-fires` job: the schedule and the due time it fires for. The job is only a
 * wake-up: the fire happens only if the schedule still names that due time as its next one
 * (shared/scheduler/fire.ts), so a job left over from an update or sent twice fires nothing.
 */
export interface FireJobData {
  schedule_id: string;
  due_at: string;
}

/**
 * Sends the job of a schedule's next fire, delivered from `dueAt` on, through the caller's
 * transaction: it commits with the `next_fire_at` it announces, so a schedule is never enabled
 * without its job (the reconciler in runner/scheduler/fire-loop.ts is the backstop if pg-boss
 * loses one).
 */
export async function sendFireJob(queue: JobQueue, tx: Tx | null, scheduleId: string, dueAt: Date): Promise<void> {
  const data: FireJobData = { schedule_id: scheduleId, due_at: dueAt.toISOString() };
  const options: SendOptions = { startAfter: dueAt };
  if (tx !== null) options.db = inTransaction(tx);
  await queue.send(QUEUES.scheduleFires.name, data, options);
}

/**
 * The next fires' jobs of several schedules through the caller's transaction: one pg-boss
 * `insert` when the queue has it, else one `send` each.
 */
export async function sendFireJobs(
  queue: BatchJobQueue,
  tx: Tx,
  fires: ReadonlyArray<{ scheduleId: string; dueAt: Date }>,
): Promise<void> {
  if (fires.length === 0) return;
  if (fires.length === 1 || queue.insert === undefined) {
    for (const fire of fires) await sendFireJob(queue, tx, fire.scheduleId, fire.dueAt);
    return;
  }
  const jobs = fires.map((fire) => ({
    data: { schedule_id: fire.scheduleId, due_at: fire.dueAt.toISOString() } satisfies FireJobData,
    startAfter: fire.dueAt,
  }));
  await queue.insert(QUEUES.scheduleFires.name, jobs, { db: inTransaction(tx) });
}
