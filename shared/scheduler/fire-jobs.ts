import type { SendOptions } from 'pg-boss';
import type { Db, Tx } from '../db/db.ts';
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
 * How far ahead of its due time a fire's job is sent. A job sent further ahead would only wait in
 * the queue, where every waiting job costs each poll of each runner (pg-boss's fetch walks them):
 * tens of thousands of schedules would keep as many jobs standing. The runners' promoter
 * (runner/scheduler/fire-loop.ts) sends the jobs of the fires entering this window, every
 * PROMOTE_SECONDS, well before they fall due.
 */
export const FIRE_HORIZON_SECONDS = 60;

/**
 * Sends the job of a schedule's next fire if that fire falls due within FIRE_HORIZON_SECONDS,
 * in the caller's transaction (after the row's `next_fire_at` was written), recording it in
 * `fire_sent_for`; a later fire's job is left to the promoter. Returns the due time sent, or null.
 */
export async function armFire(queue: JobQueue, tx: Tx, scheduleId: string): Promise<Date | null> {
  const { rows } = await tx.query<{ due: Date }>(
    `UPDATE schedules SET fire_sent_for = next_fire_at
      WHERE id = $1::uuid AND enabled AND next_fire_at < now() + make_interval(secs => $2::int)
      RETURNING next_fire_at AS due`,
    [scheduleId, FIRE_HORIZON_SECONDS],
  );
  const due = rows[0]?.due;
  if (due === undefined) return null;
  await sendFireJob(queue, tx, scheduleId, new Date(due));
  return new Date(due);
}

/**
 * The promoter's statement (`$1` the horizon in seconds, `$2` the batch): the schedules still to
 * send are read through `schedules_unsent_idx` (migration 034) from the soonest fire on, so a
 * pass reads the fires coming due, never the schedules whose fire is further away or already sent.
 */
export const PROMOTE_SQL = `WITH due AS (
    SELECT id FROM schedules
     WHERE enabled AND fire_sent_for IS DISTINCT FROM next_fire_at
       AND next_fire_at < now() + make_interval(secs => $1::int)
     ORDER BY next_fire_at LIMIT $2::int
       FOR UPDATE SKIP LOCKED)
  UPDATE schedules sc SET fire_sent_for = sc.next_fire_at FROM due WHERE sc.id = due.id
  RETURNING sc.id, sc.next_fire_at AS due`;

/**
 * Sends the jobs of up to `limit` enabled schedules whose next fire falls due within
 * FIRE_HORIZON_SECONDS and has no job yet (soonest first), in one transaction of `db`, and
 * records them sent. Rows another transaction holds are skipped: a fire or a change of timing
 * sends the job itself, anything else leaves it to the next pass, well inside the horizon.
 * Returns the fires sent.
 */
export async function promoteFires(
  db: Db,
  queue: BatchJobQueue,
  limit: number,
): Promise<Array<{ scheduleId: string; dueAt: Date }>> {
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string; due: Date }>(PROMOTE_SQL, [FIRE_HORIZON_SECONDS, limit]);
    const fires = rows.map((row) => ({ scheduleId: row.id, dueAt: new Date(row.due) }));
    await sendFireJobs(queue, tx, fires);
    return fires;
  });
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
