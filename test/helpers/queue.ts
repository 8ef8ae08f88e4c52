import type { PgBoss } from 'pg-boss';
import { createBoss, createQueues } from '../../shared/queue/queues.ts';
import type { Queryable } from '../../shared/db/db.ts';

/**
 * Starts a control-plane pg-boss on a test database and creates the queues. The template database
 * already has pg-boss's schema (scripts/test.ts installs it once), so this only checks its version.
 * The caller stops it (before the database is dropped).
 */
export async function startTestQueue(databaseUrl: string): Promise<PgBoss> {
  const boss = createBoss(databaseUrl, 'control-plane');
  // A test's failures surface through its assertions; an unheard 'error' event would crash the file.
  boss.on('error', () => {});
  await boss.start();
  await createQueues(boss);
  return boss;
}

/**
 * Installs pg-boss's schema in `databaseUrl` and leaves (scripts/test.ts, on the template), so that
 * every test database cloned from it starts its queue without running pg-boss's migrations.
 */
export async function installQueueSchema(databaseUrl: string): Promise<void> {
  const boss = await startTestQueue(databaseUrl);
  await boss.stop({ graceful: false });
}

/** An `executions` job as pg-boss stores it. */
export interface ExecutionJob {
  id: string;
  state: string;
  data: { execution_id: string };
  start_after: string;
}

/** The `executions` queue's jobs for one execution, oldest first. */
export async function executionJobs(q: Queryable, executionId: string): Promise<ExecutionJob[]> {
  const { rows } = await q.query<ExecutionJob>(
    `SELECT id::text, state::text, data, start_after FROM pgboss.job
      WHERE name = 'executions' AND data->>'execution_id' = $1 ORDER BY created_on, id`,
    [executionId],
  );
  return rows;
}
