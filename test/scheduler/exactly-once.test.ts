/**
 * Exactly once across processes (docs/scheduler.md, "Exactly once"): two control planes and two
 * runners on one database. Schedules are created through both control planes; when they fall due,
 * each control plane sends every fire job again (as a retry or a stray duplicate would) and both
 * runners' reconcilers send them once more; still every schedule fires exactly once per due time,
 * and each fire created exactly one execution.
 */
import t from 'tap';
import pino from 'pino';
import { buildApp } from '../../control-plane/app.ts';
import { FireLoop } from '../../runner/scheduler/fire-loop.ts';
import { createDb } from '../../shared/db/db.ts';
import { sendFireJob } from '../../shared/scheduler/fire-jobs.ts';
import { buildTestApp, setOverride, signInAnonymous } from '../helpers/app.ts';
import { startTestQueue } from '../helpers/queue.ts';
import { createBlob } from '../helpers/resources.ts';
import { command, createWorkflow, define, startEngine, waitFor } from '../helpers/runner.ts';

const first = await buildTestApp(t);
const { db, databaseUrl, config } = first;
// The second control plane: its own pool and pg-boss on the same database.
const secondDb = createDb({ connectionString: databaseUrl, max: 10 });
const secondBoss = await startTestQueue(databaseUrl);
const second = await buildApp({ config, db: secondDb, logger: false, queue: secondBoss });
t.teardown(async () => {
  await second.close();
  await secondBoss.stop({ graceful: false });
  await secondDb.close();
});
const planes = [
  { app: first.app, boss: first.boss },
  { app: second, boss: secondBoss },
];

const alice = await signInAnonymous(first.app);
const flow = await createWorkflow(first.app, alice);
await setOverride(first.app, 'workflow.running_executions_per_org', 'org', flow.orgId, 1000);
const definitionId = await define(first.app, alice, flow, {
  start: 'one',
  nodes: { one: { processor: 'logic.code', config: { code: 'export default () => 1' } } },
});
const { blob, revision } = await createBlob(first.app, alice, flow.orgId, { type: 'svc.compute.scheduler' });
await setOverride(first.app, 'scheduler.schedules_per_revision', 'blob', blob.id, 100);
const runners = [await startEngine(t, databaseUrl), await startEngine(t, databaseUrl)];

const SCHEDULES = 40;

t.test('every due time fires once, whoever sends its job and however often', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < SCHEDULES; i++) {
    const plane = planes[i % 2]!;
    const created = await command(plane.app, alice, revision.id, 'create_schedule', {
      cron: `${i % 60} 0 * * *`,
      target: { revision_id: flow.rev, session_id: flow.sessionId, definition_id: definitionId },
    });
    ids.push(created.schedule.id);
  }

  for (const round of [1, 2]) {
    // Time passes: every schedule falls due at the same instant.
    const { rows } = await db.query<{ id: string; due: string }>(
      `UPDATE schedules SET next_fire_at = date_trunc('milliseconds', now()) - interval '2 minutes' WHERE revision_id = $1 RETURNING id, next_fire_at AS due`,
      [revision.id],
    );
    t.equal(rows.length, SCHEDULES);
    // Both control planes send every job, and both runners' reconcilers add theirs.
    await Promise.all(
      planes.flatMap((plane) => rows.map((row) => sendFireJob(plane.boss, null, row.id, new Date(row.due)))),
    );
    const log = pino({ level: 'silent' });
    await Promise.all(runners.map((runner) => new FireLoop({ db: runner.db, boss: runner.boss, log }).reconcile()));

    const count = async () =>
      (
        await db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM schedule_runs r JOIN schedules s ON s.id = r.schedule_id WHERE s.revision_id = $1',
          [revision.id],
        )
      ).rows[0]!.n;
    await waitFor(count, (n) => n >= SCHEDULES * round, `round ${round}: ${SCHEDULES * round} runs`);
    // Let every duplicate job be taken before counting.
    await waitFor(
      async () =>
        (
          await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'schedule-fires' AND state IN ('created', 'retry', 'active') AND start_after <= now()`,
          )
        ).rows[0]!.n,
      (n) => n === 0,
      'no fire job left due',
    );
    t.equal(await count(), SCHEDULES * round, `round ${round}: one run per schedule per due time`);

    const perSchedule = await db.query<{ schedule_id: string; n: number; started: number }>(
      `SELECT schedule_id, count(*)::int AS n, count(*) FILTER (WHERE status = 'started')::int AS started FROM schedule_runs WHERE schedule_id = ANY($1::uuid[]) GROUP BY schedule_id`,
      [ids],
    );
    t.equal(perSchedule.rows.length, SCHEDULES);
    t.ok(
      perSchedule.rows.every((r) => r.n === round && r.started === round),
      'each schedule: one started run per round',
    );
    const executions = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM executions WHERE schedule_id = ANY($1::uuid[])',
      [ids],
    );
    t.equal(executions.rows[0]!.n, SCHEDULES * round, 'one execution per fire');
    // Fired in batches, their wake-ups sent in one insert: every one of them runs.
    await waitFor(
      async () =>
        (
          await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM executions WHERE schedule_id = ANY($1::uuid[]) AND status = 'succeeded'`,
            [ids],
          )
        ).rows[0]!.n,
      (n) => n === SCHEDULES * round,
      `round ${round}: every fired execution to succeed`,
    );
  }
  const fired = await db.query<{ runner_ok: boolean }>(
    `SELECT bool_and(next_fire_at > now()) AS runner_ok FROM schedules WHERE revision_id = $1`,
    [revision.id],
  );
  t.ok(fired.rows[0]!.runner_ok, 'every schedule moved to a fire ahead');
});
