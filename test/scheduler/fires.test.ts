/**
 * Schedule fires (shared/scheduler/fire.ts, docs/scheduler.md "Fires"), driven by a controllable
 * clock: a test moves a schedule's next fire into the past and sends its job, as time passing
 * would, then a runner fires it. A fire creates the execution as create_execution would; a limit's
 * refusal is a `refused` run and the schedule keeps firing; a creator without write is `failed`
 * with `forbidden`; a deleted target is `failed` and disables the schedule; missed times fire
 * once; fireScheduleNow fires without moving the next fire; the sweep removes old runs.
 */
import t from 'tap';
import type { PgBoss } from 'pg-boss';
import pino from 'pino';
import { FireLoop } from '../../runner/scheduler/fire-loop.ts';
import { runRecordedSweep } from '../../shared/retention/recorded-sweep.ts';
import { FIRE_HORIZON_SECONDS, PROMOTE_SQL, sendFireJob } from '../../shared/scheduler/fire-jobs.ts';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from '../helpers/app.ts';
import { opsRequest, startOpsApp } from '../helpers/ops.ts';
import { createBlob } from '../helpers/resources.ts';
import { command, createWorkflow, define, startEngine, waitFor, waitForEnd, type Workflow } from '../helpers/runner.ts';

const { app, db, boss, config, databaseUrl } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);

const DOUBLE = {
  start: 'one',
  nodes: { one: { processor: 'logic.code', config: { code: 'export default (input) => ({ twice: input.n * 2 })' } } },
};

const flow: Workflow = await createWorkflow(app, alice);
const definitionId = await define(app, alice, flow, DOUBLE);
const { revision: schedRev, blob: schedBlob } = await createBlob(app, alice, flow.orgId, {
  type: 'svc.compute.scheduler',
});
const target = { revision_id: flow.rev, session_id: flow.sessionId, definition_id: definitionId };
await startEngine(t, databaseUrl);

async function createSchedule(caller: Caller, params: Record<string, unknown>): Promise<Record<string, any>> {
  return (
    await command(app, caller, schedRev.id, 'create_schedule', {
      cron: '0 0 * * *',
      target,
      input_data: { n: 21 },
      ...params,
    })
  ).schedule;
}

/** Time passes: the schedule's next fire is `secondsAgo` in the past, and its job is sent for it. */
async function makeDue(queue: PgBoss, scheduleId: string, secondsAgo = 1): Promise<string> {
  const { rows } = await db.query<{ due: string }>(
    `UPDATE schedules SET next_fire_at = date_trunc('milliseconds', now()) - make_interval(secs => $2::int) WHERE id = $1 RETURNING next_fire_at AS due`,
    [scheduleId, secondsAgo],
  );
  await sendFireJob(queue, null, scheduleId, new Date(rows[0]!.due));
  return rows[0]!.due;
}

async function runs(scheduleId: string): Promise<any[]> {
  return (await command(app, alice, schedRev.id, 'list_executions', { schedule_id: scheduleId })).executions;
}

function waitForRuns(scheduleId: string, count: number): Promise<any[]> {
  return waitFor(
    () => runs(scheduleId),
    (list) => list.length >= count,
    `${count} run(s) of ${scheduleId}`,
  );
}

t.test('a due schedule fires once into its target session; the execution runs; the next fire moves on', async (t) => {
  const schedule = await createSchedule(alice, {});
  const due = await makeDue(boss, schedule.id);
  // The same due time, four more times (a retry, a second control plane, the reconciler...).
  for (let i = 0; i < 4; i++) await sendFireJob(boss, null, schedule.id, new Date(due));
  const [run] = await waitForRuns(schedule.id, 1);
  t.match(run, { schedule_id: schedule.id, status: 'started', due_at: due, error: null, limit: null });
  t.ok(Date.parse(run.fired_at) >= Date.parse(due));
  const ended = await waitForEnd(app, alice, flow, run.execution_id);
  t.match(ended, {
    status: 'succeeded',
    session_id: flow.sessionId,
    definition_id: definitionId,
    input_data: { n: 21 },
    output: { twice: 42 },
  });
  const { rows } = await db.query('SELECT schedule_id FROM executions WHERE id = $1', [run.execution_id]);
  t.equal(rows[0].schedule_id, schedule.id, 'the execution names its schedule');

  const after = (await command(app, alice, schedRev.id, 'get_schedule', { schedule_id: schedule.id })).schedule;
  t.ok(Date.parse(after.next_fire_at) > Date.now(), 'the next fire is ahead');
  t.equal(new Date(after.next_fire_at).getUTCHours(), 0);
  t.match(after.last_run, { id: run.id, status: 'started' });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  t.equal((await runs(schedule.id)).length, 1, 'five jobs for one due time: one run');
});

t.test("a fire's job waits in the queue only within the horizon; the promoter sends it as it comes due", async (t) => {
  const jobsOf = async (scheduleId: string) =>
    (
      await db.query<{ due: string; on_time: boolean }>(
        `SELECT data->>'due_at' AS due, start_after = (data->>'due_at')::timestamptz AS on_time
           FROM pgboss.job WHERE name = 'schedule-fires' AND data->>'schedule_id' = $1`,
        [scheduleId],
      )
    ).rows;
  // Hourly, at the minute half an hour from now: its first fire is at least 29 minutes away.
  const minute = (new Date().getUTCMinutes() + 30) % 60;
  const later = await createSchedule(alice, { cron: `${minute} * * * *` });
  t.same(await jobsOf(later.id), [], 'a fire half an hour away has no job waiting');
  const soon = await createSchedule(alice, { cron: '* * * * *' });
  t.same(
    (await jobsOf(soon.id)).map((job) => job.due),
    [new Date(soon.next_fire_at).toISOString()],
    'a fire within the minute has its job at once',
  );
  await command(app, alice, schedRev.id, 'delete_schedule', { schedule_id: soon.id });

  // Time passes: the fire is two seconds away. A runner's promoter sends its job, once
  // however many promoters pass (this one and the started engine's).
  const { rows } = await db.query<{ due: string }>(
    `UPDATE schedules SET next_fire_at = date_trunc('milliseconds', now()) + interval '2 seconds' WHERE id = $1 RETURNING next_fire_at AS due`,
    [later.id],
  );
  const due = new Date(rows[0]!.due).toISOString();
  const loop = new FireLoop({ db, boss, log: pino({ level: 'silent' }) });
  await loop.promote();
  await loop.promote();
  const jobs = await jobsOf(later.id);
  t.same(
    jobs.map((job) => [job.due, job.on_time]),
    [[due, true]],
    'one job, delivered from its due time',
  );
  const [run] = await waitForRuns(later.id, 1);
  t.match(run, { status: 'started', due_at: due });
  await command(app, alice, schedRev.id, 'delete_schedule', { schedule_id: later.id });
});

t.test('the promoter reads only the fires coming due, whatever the number of schedules', async (t) => {
  // 20,000 schedules whose fire is a day away (no job yet), beside a few already sent.
  await db.query(
    `INSERT INTO schedules (revision_id, cron, timezone, target_revision_id, target_session_id, target_definition_id,
                            enabled, next_fire_at, fire_sent_for, created_by, updated_by)
     SELECT $1::uuid, '1 2 3 4 *', 'UTC', $2::uuid, $3::uuid, $4::uuid, true,
            now() + interval '1 day' + i * interval '1 second', CASE WHEN i <= 100 THEN now() END, $5::uuid, $5::uuid
       FROM generate_series(1, 20000) i`,
    [schedRev.id, flow.rev, flow.sessionId, definitionId, alice.user.id],
  );
  t.teardown(() =>
    db.query(`DELETE FROM schedules WHERE revision_id = $1::uuid AND cron = '1 2 3 4 *'`, [schedRev.id]),
  );
  await db.query('ANALYZE schedules');
  interface PlanNode {
    'Node Type': string;
    'Index Name'?: string;
    'Relation Name'?: string;
    Plans?: PlanNode[];
  }
  const nodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(nodes)];
  const { rows } = await db.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${PROMOTE_SQL}`, [
    FIRE_HORIZON_SECONDS,
    1000,
  ]);
  const reads = nodes(rows[0]!['QUERY PLAN'][0].Plan).filter(
    (n) => n['Relation Name'] === 'schedules' && n['Node Type'] !== 'ModifyTable',
  );
  t.same(
    reads.map((n) => n['Index Name']),
    ['schedules_unsent_idx', 'schedules_pkey'],
    'the unsent fires in due order through their partial index, then each row by its key',
  );
});

t.test('after downtime, a schedule fires once for the times it missed', async (t) => {
  const schedule = await createSchedule(alice, { cron: '*/1 * * * *' });
  await makeDue(boss, schedule.id, 600);
  const [run] = await waitForRuns(schedule.id, 1);
  t.equal(run.status, 'started');
  const after = (await command(app, alice, schedRev.id, 'get_schedule', { schedule_id: schedule.id })).schedule;
  t.ok(
    Date.parse(after.next_fire_at) > Date.now() - 1000,
    'the next fire is the first after now, not the ten it missed',
  );
  t.equal((await runs(schedule.id)).length, 1);
  await command(app, alice, schedRev.id, 'delete_schedule', { schedule_id: schedule.id });
});

t.test(
  "a limit's refusal is a refused run with the limit object; the schedule stays enabled and fires again",
  async (t) => {
    const own = await createWorkflow(app, alice);
    const ownDefinition = await define(app, alice, own, DOUBLE);
    await setOverride(app, 'workflow.executions_per_session', 'blob', own.blobId, 0);
    const schedule = await createSchedule(alice, {
      target: { revision_id: own.rev, session_id: own.sessionId, definition_id: ownDefinition },
    });
    await makeDue(boss, schedule.id);
    const [run] = await waitForRuns(schedule.id, 1);
    t.match(run, { status: 'refused', execution_id: null, error: { code: 'limit_exceeded' } });
    t.same(run.limit, { id: 'workflow.executions_per_session', value: 0, held: 0 });
    const after = (await command(app, alice, schedRev.id, 'get_schedule', { schedule_id: schedule.id })).schedule;
    t.equal(after.enabled, true);
    t.ok(Date.parse(after.next_fire_at) > Date.now());

    await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'workflow.executions_per_session'`);
    await makeDue(boss, schedule.id);
    const [latest] = await waitForRuns(schedule.id, 2);
    t.equal(latest.status, 'started', 'the next fire runs once the limit allows it');

    // The scheduler's own entitlement, turned off after the schedule was made.
    await setOverride(app, 'scheduler.enabled', 'org', flow.orgId, false);
    await makeDue(boss, schedule.id);
    const [off] = await waitForRuns(schedule.id, 3);
    t.match(off, { status: 'refused', limit: { id: 'scheduler.enabled', value: false } });
    await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'scheduler.enabled'`);
  },
);

t.test(
  'a creator who lost write on the target: failed with forbidden; a deleted target: failed, disabled',
  async (t) => {
    const bobs = await createWorkflow(app, bob);
    const bobsDefinition = await define(app, bob, bobs, DOUBLE);
    const member = await call(app, 'POST', '/v1/members', {
      as: bob,
      body: { target: 'organization', target_id: bobs.orgId, user_id: alice.user.id, role: 'write' },
    });
    t.ok(member.status < 300, JSON.stringify(member.body));
    const schedule = await createSchedule(alice, {
      target: { revision_id: bobs.rev, session_id: bobs.sessionId, definition_id: bobsDefinition },
    });
    t.ok(
      (
        await call(app, 'DELETE', '/v1/members', {
          as: bob,
          body: { target: 'organization', target_id: bobs.orgId, user_id: alice.user.id },
        })
      ).status < 300,
    );
    await makeDue(boss, schedule.id);
    const [forbidden] = await waitForRuns(schedule.id, 1);
    t.match(forbidden, { status: 'failed', execution_id: null, error: { code: 'forbidden' }, limit: null });
    t.equal(
      (await command(app, alice, schedRev.id, 'get_schedule', { schedule_id: schedule.id })).schedule.enabled,
      true,
      'still enabled',
    );

    const gone = await createWorkflow(app, alice);
    const goneDefinition = await define(app, alice, gone, DOUBLE);
    const doomed = await createSchedule(alice, {
      target: { revision_id: gone.rev, session_id: gone.sessionId, definition_id: goneDefinition },
    });
    await command(app, alice, gone.rev, 'delete_session', { session_id: gone.sessionId });
    await makeDue(boss, doomed.id);
    const [failed] = await waitForRuns(doomed.id, 1);
    t.match(failed, { status: 'failed', error: { code: 'not_found', message: /session/ } });
    t.match((await command(app, alice, schedRev.id, 'get_schedule', { schedule_id: doomed.id })).schedule, {
      enabled: false,
      next_fire_at: null,
    });
  },
);

t.test('a fire acts as the account that last wrote the schedule, not as its creator', async (t) => {
  const member = { target: 'organization', target_id: flow.orgId, user_id: bob.user.id };
  t.ok((await call(app, 'POST', '/v1/members', { as: alice, body: { ...member, role: 'write' } })).status < 300);
  const schedule = await createSchedule(alice, {});
  const updated = (
    await command(app, bob, schedRev.id, 'update_schedule', { schedule_id: schedule.id, input_data: { n: 5 } })
  ).schedule;
  t.match(updated, { created_by: alice.user.id, updated_by: bob.user.id });
  t.ok((await call(app, 'DELETE', '/v1/members', { as: alice, body: member })).status < 300);
  await makeDue(boss, schedule.id);
  const [run] = await waitForRuns(schedule.id, 1);
  t.match(run, { status: 'failed', execution_id: null, error: { code: 'forbidden' } }, 'bob can no longer write it');

  // The creator sets it again: the fires act as her, and run.
  await command(app, alice, schedRev.id, 'update_schedule', { schedule_id: schedule.id, input_data: { n: 4 } });
  await makeDue(boss, schedule.id, 2);
  const [latest] = await waitForRuns(schedule.id, 2);
  t.equal(latest.status, 'started');
  t.match(await waitForEnd(app, alice, flow, latest.execution_id), { status: 'succeeded', output: { twice: 8 } });
  await command(app, alice, schedRev.id, 'delete_schedule', { schedule_id: schedule.id });
});

t.test('ops: schedules by organization or blob, fireScheduleNow, and the reconciler', async (t) => {
  const { ops, boss: opsBoss } = await startOpsApp(t, { config, db, databaseUrl });
  const graphql = async (query: string) => (await opsRequest(ops, query, `Bearer ${config.secrets.OPS_TOKEN}`)).body;
  const schedule = await createSchedule(alice, { cron: '30 6 * * *' });
  const before = schedule.next_fire_at;
  const fired = await graphql(
    `mutation { fireScheduleNow(scheduleId: "${schedule.id}") { id status dueAt executionId } }`,
  );
  t.match(fired.data.fireScheduleNow, { status: 'started', dueAt: null });
  t.equal((await waitForEnd(app, alice, flow, fired.data.fireScheduleNow.executionId)).status, 'succeeded');
  t.equal(
    (await command(app, alice, schedRev.id, 'get_schedule', { schedule_id: schedule.id })).schedule.next_fire_at,
    before,
    'the next fire did not move',
  );

  const byBlob = await graphql(
    `{ schedules(blobId: "${schedBlob.id}", limit: 1000) { id cron nextFireAt enabled lastRun { status dueAt } } }`,
  );
  const listed = byBlob.data.schedules.find((s: { id: string }) => s.id === schedule.id);
  t.match(listed, {
    cron: '30 6 * * *',
    nextFireAt: before,
    enabled: true,
    lastRun: { status: 'started', dueAt: null },
  });
  const byOrg = await graphql(`{ schedules(orgId: "${flow.orgId}") { id } }`);
  t.ok(byOrg.data.schedules.some((s: { id: string }) => s.id === schedule.id));
  const bad = await graphql('{ schedules { id } }');
  t.equal(bad.errors[0].extensions.code, 'invalid_argument');
  t.equal(
    (await graphql('mutation { fireScheduleNow(scheduleId: "00000000-0000-4000-8000-000000000000") { id } }')).data
      .fireScheduleNow,
    null,
  );

  // A job lost (deleted from the queue): the reconciler sends it again once the fire is overdue.
  await db.query(
    `UPDATE schedules SET next_fire_at = date_trunc('second', now()) - interval '5 minutes' WHERE id = $1`,
    [schedule.id],
  );
  await db.query(`DELETE FROM pgboss.job WHERE name = 'schedule-fires' AND data->>'schedule_id' = $1`, [schedule.id]);
  const loop = new FireLoop({ db, boss: opsBoss, log: pino({ level: 'silent' }) });
  t.ok((await loop.reconcile()) >= 1);
  const all = await waitForRuns(schedule.id, 2);
  t.equal(all[0].status, 'started');
  t.ok(all[0].due_at !== null, 'a cron fire');
});

t.test('the retention sweep removes runs fired longer ago than scheduler.run_retention_days', async (t) => {
  const schedule = await createSchedule(alice, {});
  await fireNow(schedule.id);
  await fireNow(schedule.id);
  const list = await runs(schedule.id);
  t.equal(list.length, 2);
  await db.query(`UPDATE schedule_runs SET fired_at = now() - interval '31 days' WHERE id = $1`, [list[1].id]);
  const result = await runRecordedSweep(db, { trigger: 'ops' });
  t.ok(result.ran);
  t.ok(result.ran && result.sweep.runs_removed >= 1);
  t.same(
    (await runs(schedule.id)).map((r) => r.id),
    [list[0].id],
  );

  await setOverride(app, 'scheduler.run_retention_days', 'blob', schedBlob.id, null);
  await db.query(`UPDATE schedule_runs SET fired_at = now() - interval '400 days' WHERE id = $1`, [list[0].id]);
  await runRecordedSweep(db, { trigger: 'ops' });
  t.equal((await runs(schedule.id)).length, 1, 'null keeps them forever');
});

async function fireNow(scheduleId: string): Promise<void> {
  const { fireSchedule } = await import('../../shared/scheduler/fire.ts');
  await fireSchedule(db, boss, { scheduleId, dueAt: null });
}

t.test('an update moves the next fire: the old job fires nothing; a new target is checked and used', async (t) => {
  const schedule = await createSchedule(alice, {});
  const oldDue = schedule.next_fire_at;
  const other = await createWorkflow(app, alice);
  const otherDefinition = await define(app, alice, other, DOUBLE);
  // The job of the old next fire is queued (as it is once that fire is within the horizon); the
  // update moves the next fire.
  await db.query(`DELETE FROM pgboss.job WHERE name = 'schedule-fires' AND data->>'schedule_id' = $1`, [schedule.id]);
  await sendFireJob(boss, null, schedule.id, new Date(oldDue));
  const updated = (
    await command(app, alice, schedRev.id, 'update_schedule', {
      schedule_id: schedule.id,
      cron: '0 5 * * *',
      target: { revision_id: other.rev, session_id: other.sessionId, definition_id: otherDefinition },
    })
  ).schedule;
  t.not(updated.next_fire_at, oldDue);
  t.same(updated.target, { revision_id: other.rev, session_id: other.sessionId, definition_id: otherDefinition });
  // Its time comes (the job is delivered now): it names a due time that is no longer the next fire.
  await db.query(
    `UPDATE pgboss.job SET start_after = now() WHERE name = 'schedule-fires' AND data->>'schedule_id' = $1 AND data->>'due_at' = $2`,
    [schedule.id, oldDue],
  );
  await waitFor(
    async () =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'schedule-fires' AND data->>'schedule_id' = $1 AND data->>'due_at' = $2 AND state = 'completed'`,
          [schedule.id, oldDue],
        )
      ).rows[0]!.n,
    (n) => n === 1,
    'the old job to be taken',
  );
  t.same(await runs(schedule.id), [], 'the stale job fired nothing');

  await makeDue(boss, schedule.id);
  const [run] = await waitForRuns(schedule.id, 1);
  const ended = await waitForEnd(app, alice, other, run.execution_id);
  t.equal(ended.session_id, other.sessionId, 'the fire went to the new target');

  const strangers = await createWorkflow(app, bob);
  const strangerDefinition = await define(app, bob, strangers, DOUBLE);
  const refused = await call(app, 'POST', `/v1/revisions/${schedRev.id}/update_schedule`, {
    as: alice,
    body: {
      schedule_id: schedule.id,
      target: { revision_id: strangers.rev, session_id: strangers.sessionId, definition_id: strangerDefinition },
    },
  });
  t.equal(refused.status, 403);
  t.same(
    (await command(app, alice, schedRev.id, 'get_schedule', { schedule_id: schedule.id })).schedule.target.revision_id,
    other.rev,
    'unchanged',
  );

  // A deleted schedule's pending job fires nothing either.
  await makeDue(boss, schedule.id, 2);
  await command(app, alice, schedRev.id, 'delete_schedule', { schedule_id: schedule.id });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM schedule_runs WHERE schedule_id = $1',
    [schedule.id],
  );
  t.equal(rows[0]!.n, 0, 'runs went with the schedule, and no new one was written');
});

t.test('a disabled schedule sends no job and never fires; enabling it arms it', async (t) => {
  const schedule = await createSchedule(alice, { enabled: false });
  t.match(schedule, { enabled: false, next_fire_at: null });
  const jobs = async () =>
    (
      await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'schedule-fires' AND data->>'schedule_id' = $1`,
        [schedule.id],
      )
    ).rows[0]!.n;
  t.equal(await jobs(), 0);
  const enabled = (
    await command(app, alice, schedRev.id, 'update_schedule', {
      schedule_id: schedule.id,
      enabled: true,
      cron: '* * * * *',
    })
  ).schedule;
  t.ok(Date.parse(enabled.next_fire_at) > Date.now());
  t.equal(await jobs(), 1, 'its next fire is within the minute: its job is sent with the update');
  await command(app, alice, schedRev.id, 'delete_schedule', { schedule_id: schedule.id });
});

t.test('one transaction fires a batch with mixed outcomes, each its own', async (t) => {
  const { fireSchedules } = await import('../../shared/scheduler/fire.ts');
  const limited = await createWorkflow(app, alice);
  const limitedDefinition = await define(app, alice, limited, DOUBLE);
  await setOverride(app, 'workflow.executions_per_session', 'blob', limited.blobId, 0);
  const gone = await createWorkflow(app, alice);
  const goneDefinition = await define(app, alice, gone, DOUBLE);
  const ok = await createSchedule(alice, {});
  const refused = await createSchedule(alice, {
    target: { revision_id: limited.rev, session_id: limited.sessionId, definition_id: limitedDefinition },
  });
  const doomed = await createSchedule(alice, {
    target: { revision_id: gone.rev, session_id: gone.sessionId, definition_id: goneDefinition },
  });
  await command(app, alice, gone.rev, 'delete_session', { session_id: gone.sessionId });
  const due = (
    await db.query<{ due: string }>(`SELECT date_trunc('milliseconds', now()) - interval '3 seconds' AS due`)
  ).rows[0]!.due;
  await db.query('UPDATE schedules SET next_fire_at = $2 WHERE id = ANY($1::uuid[])', [
    [ok.id, refused.id, doomed.id],
    due,
  ]);
  const outcomes = await fireSchedules(db, boss, [
    { scheduleId: ok.id, dueAt: due },
    { scheduleId: refused.id, dueAt: due },
    { scheduleId: ok.id, dueAt: due },
    { scheduleId: doomed.id, dueAt: due },
    { scheduleId: ok.id, dueAt: '2001-01-01T00:00:00.000Z' },
    { scheduleId: '00000000-0000-4000-8000-000000000000', dueAt: due },
  ]);
  t.match(outcomes[0], { fired: { status: 'started' }, disabled: false });
  t.match(outcomes[1], { fired: { status: 'refused', limit: { id: 'workflow.executions_per_session' } } });
  t.same(outcomes[2], { skipped: 'stale' }, 'the same due time twice in one batch fires once');
  t.match(outcomes[3], { fired: { status: 'failed', error: { code: 'not_found' } }, disabled: true });
  t.same(outcomes[4], { skipped: 'stale' });
  t.same(outcomes[5], { skipped: 'not_found' });
  const started = outcomes[0] as { fired: { execution_id: string } };
  t.equal((await waitForEnd(app, alice, flow, started.fired.execution_id)).status, 'succeeded');
  await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'workflow.executions_per_session'`);
});
