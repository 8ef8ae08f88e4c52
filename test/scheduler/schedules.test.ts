/**
 * Scheduler commands through the API (docs/scheduler.md): create, update, get, delete and list
 * schedules on a scheduler revision, REST and WebSocket alike; every bad input a 400 (or 403 for
 * a target the caller cannot write) that stores nothing; the schedule quota and the shortest
 * interval refused with their limit objects; `held` on Get Revision.
 */
import t from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from '../helpers/app.ts';
import { createBlob, createOrg } from '../helpers/resources.ts';
import { command, createWorkflow, define, type Workflow } from '../helpers/runner.ts';
import { connect, wsUrl } from '../helpers/ws-client.ts';

const { app, db } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const mallory = await signInAnonymous(app);

const ONE = { start: 'one', nodes: { one: { processor: 'logic.code', config: { code: 'export default () => 1' } } } };

async function scheduler(caller: Caller, orgId?: string): Promise<{ orgId: string; blobId: string; rev: string }> {
  const org = orgId ?? (await createOrg(app, caller)).id;
  const { blob, revision } = await createBlob(app, caller, org, { type: 'svc.compute.scheduler' });
  return { orgId: org, blobId: blob.id, rev: revision.id };
}

const flow: Workflow = await createWorkflow(app, alice);
const definitionId = await define(app, alice, flow, ONE);
const sched = await scheduler(alice, flow.orgId);
const target = { revision_id: flow.rev, session_id: flow.sessionId, definition_id: definitionId };

function post(caller: Caller, rev: string, name: string, body: unknown) {
  return call(app, 'POST', `/v1/revisions/${rev}/${name}`, { as: caller, body });
}

async function scheduleCount(rev: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM schedules WHERE revision_id = $1', [
    rev,
  ]);
  return rows[0]!.n;
}

t.test('create_schedule answers the record with its next fire; get, list, update and delete follow', async (t) => {
  const created = await command(app, alice, sched.rev, 'create_schedule', {
    alias: 'nightly',
    cron: '0 3 * * *',
    timezone: 'Europe/Paris',
    target,
    input_data: { n: 1 },
  });
  const s = created.schedule;
  t.match(s, {
    alias: 'nightly',
    cron: '0 3 * * *',
    timezone: 'Europe/Paris',
    target,
    input_data: { n: 1 },
    enabled: true,
    created_by: alice.user.id,
    revision_id: sched.rev,
  });
  t.ok(Date.parse(s.next_fire_at) > Date.now(), 'the next fire is ahead');
  t.equal(new Date(s.next_fire_at).getUTCMinutes(), 0);
  t.match(
    new Date(s.next_fire_at).toLocaleString('en-GB', { timeZone: 'Europe/Paris', hour12: false }),
    /03:00:00/,
    '3:00 in Paris',
  );

  const byAlias = await command(app, alice, sched.rev, 'get_schedule', { schedule_id: 'nightly' });
  t.same(byAlias.schedule, { ...s, last_run: null });

  // Its first fire's job is queued once that fire is within the horizon (docs/scheduler.md,
  // "Fires"): at once if it is, else by a runner's promoter; the row records which.
  const { rows } = await db.query<{ n: number; sent: boolean }>(
    `SELECT (SELECT count(*)::int FROM pgboss.job WHERE name = 'schedule-fires' AND data->>'schedule_id' = $1) AS n,
            (SELECT fire_sent_for IS NOT NULL FROM schedules WHERE id = $1::uuid) AS sent`,
    [s.id],
  );
  t.equal(rows[0]!.n, rows[0]!.sent ? 1 : 0, 'its first fire is queued when the row says it was sent');

  const rev = await call(app, 'GET', `/v1/revisions/${sched.rev}`, { as: alice });
  t.equal(rev.body.revision.held['scheduler.schedules_per_revision'], 1, 'held counts schedules');

  const disabled = await command(app, alice, sched.rev, 'update_schedule', { schedule_id: s.id, enabled: false });
  t.match(disabled.schedule, { enabled: false, next_fire_at: null, cron: '0 3 * * *' });
  const moved = await command(app, alice, sched.rev, 'update_schedule', {
    schedule_id: s.id,
    cron: '15 4 * * 1',
    timezone: 'UTC',
    enabled: true,
    alias: null,
    input_data: null,
  });
  t.match(moved.schedule, { enabled: true, cron: '15 4 * * 1', timezone: 'UTC', alias: null, input_data: null });
  const next = new Date(moved.schedule.next_fire_at);
  t.same([next.getUTCDay(), next.getUTCHours(), next.getUTCMinutes()], [1, 4, 15], 'Monday 04:15 UTC');

  const list = await command(app, alice, sched.rev, 'list_schedules', {});
  t.same(
    list.schedules.map((x: { id: string }) => x.id),
    [s.id],
  );
  t.equal(list.last_session_id, null);

  const deleted = await command(app, alice, sched.rev, 'delete_schedule', { schedule_id: s.id });
  t.equal(deleted.schedule.id, s.id);
  t.equal((await post(alice, sched.rev, 'get_schedule', { schedule_id: s.id })).status, 404);
  t.equal(await scheduleCount(sched.rev), 0);
});

t.test('WebSocket JSON-RPC answers the same commands', async (t) => {
  const ws = await connect(t, await wsUrl(app), { headers: alice.headers });
  const rpc = (id: number, method: string, params: unknown) => ws.call({ jsonrpc: '2.0', id, method, params });
  const created = await rpc(1, 'create_schedule', { revision_id: sched.rev, cron: '0 0 * * *', target });
  t.equal(created.result.schedule.cron, '0 0 * * *');
  const runs = await rpc(2, 'list_executions', { revision_id: sched.rev, schedule_id: created.result.schedule.id });
  t.same(runs.result, { executions: [], last_session_id: null });
  const refused = await rpc(3, 'create_schedule', { revision_id: sched.rev, cron: '* * * * * * *', target });
  t.equal(refused.error.code, -32602);
  t.equal(refused.error.data.error, 'invalid_request_body');
  const workflowRuns = await rpc(4, 'list_executions', { revision_id: flow.rev, session_id: flow.sessionId });
  t.same(
    workflowRuns.result,
    { executions: [], last_session_id: null },
    'list_executions of a workflow revision is still the session listing',
  );
  t.ok((await rpc(5, 'delete_schedule', { revision_id: sched.rev, schedule_id: created.result.schedule.id })).result);
});

t.test('bad input: a clear 400 (403 for a target one cannot write), nothing stored', async (t) => {
  const otherFlow = await createWorkflow(app, alice);
  const otherDefinition = await define(app, alice, otherFlow, ONE);
  const strangers = await createWorkflow(app, mallory);
  const strangerDefinition = await define(app, mallory, strangers, ONE);
  const cases: Array<[string, Record<string, unknown>, number, string, RegExp]> = [
    ['malformed cron', { cron: 'every day', target }, 400, 'invalid_request_body', /cron/],
    ['7 fields', { cron: '0 0 0 1 1 * 2030', target }, 400, 'invalid_request_body', /5 fields .* or 6/],
    ['4 fields', { cron: '0 0 * *', target }, 400, 'invalid_request_body', /got 4/],
    ['minute out of range', { cron: '61 * * * *', target }, 400, 'invalid_request_body', /minute/],
    ['hour out of range', { cron: '0 24 * * *', target }, 400, 'invalid_request_body', /hour/],
    ['never fires', { cron: '0 0 30 2 *', target }, 400, 'invalid_request_body', /never fires/],
    ['nickname', { cron: '@daily', target }, 400, 'invalid_request_body', /nicknames/],
    ['unknown zone', { cron: '0 0 * * *', timezone: 'Mars/Olympus', target }, 400, 'invalid_request_body', /timezone/],
    [
      'offset is not a zone',
      { cron: '0 0 * * *', timezone: '+01:00', target },
      400,
      'invalid_request_body',
      /timezone/,
    ],
    ['cron not a string', { cron: 5, target }, 400, 'invalid_request_body', /cron/],
    ['no target', { cron: '0 0 * * *' }, 400, 'invalid_request_body', /target/],
    ['unknown field', { cron: '0 0 * * *', target, colour: 'red' }, 400, 'invalid_request_body', /colour/],
    [
      'definition of another revision',
      { cron: '0 0 * * *', target: { ...target, definition_id: otherDefinition } },
      400,
      'invalid_request_body',
      /definition_id/,
    ],
    [
      'session of another revision',
      { cron: '0 0 * * *', target: { ...target, session_id: otherFlow.sessionId } },
      400,
      'invalid_request_body',
      /session_id/,
    ],
    [
      'target not a workflow revision',
      { cron: '0 0 * * *', target: { ...target, revision_id: sched.rev } },
      400,
      'invalid_request_body',
      /workflow revision/,
    ],
    [
      'target in an organization one cannot write',
      {
        cron: '0 0 * * *',
        target: { revision_id: strangers.rev, session_id: strangers.sessionId, definition_id: strangerDefinition },
      },
      403,
      'forbidden',
      /target/,
    ],
    [
      'target that does not exist',
      { cron: '0 0 * * *', target: { ...target, revision_id: '00000000-0000-4000-8000-000000000000' } },
      403,
      'forbidden',
      /target/,
    ],
    [
      'limit on a record-cursor listing',
      { cron: '0 0 * * *', target, limit: 10 },
      400,
      'invalid_request_body',
      /limit/,
    ],
  ];
  for (const [what, body, status, error, message] of cases) {
    const res = await post(alice, sched.rev, 'create_schedule', body);
    t.equal(res.status, status, what);
    t.match(res.body, { status: 'failure', error, message }, what);
  }
  const listing = await post(alice, sched.rev, 'list_schedules', { limit: 10 });
  t.equal(listing.status, 400, 'limit on list_schedules');
  t.equal(listing.body.error, 'invalid_request_body');
  const runs = await post(alice, sched.rev, 'list_executions', {
    schedule_id: '00000000-0000-4000-8000-000000000000',
    limit: 5,
  });
  t.equal(runs.status, 400, 'limit on list_executions');

  const big = await post(alice, sched.rev, 'create_schedule', {
    cron: '0 0 * * *',
    target,
    input_data: { text: 'x'.repeat(65_536) },
  });
  t.equal(big.status, 400);
  t.same(big.body.limit, { id: 'workflow.execution_input_bytes', value: 65_536 });
  t.equal(big.body.error, 'limit_exceeded');

  const readOnly = await post(mallory, sched.rev, 'create_schedule', { cron: '0 0 * * *', target });
  t.equal(readOnly.status, 404, 'a stranger does not see the scheduler revision');
  t.equal(await scheduleCount(sched.rev), 0, 'nothing stored');

  const unknown = await post(alice, flow.rev, 'create_schedule', { cron: '0 0 * * *', target });
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error, 'unknown_command', 'a workflow revision has no create_schedule');
});

t.test(
  'scheduler.min_interval_seconds: the shortest gap of the expression, refused with its limit object',
  async (t) => {
    const fast = await post(alice, sched.rev, 'create_schedule', { cron: '*/30 * * * * *', target });
    t.equal(fast.status, 400);
    t.same(fast.body.limit, { id: 'scheduler.min_interval_seconds', value: 60 });
    t.equal(fast.body.error, 'limit_exceeded');
    t.match(fast.body.message, /30 s apart/);
    const minute = await post(alice, sched.rev, 'create_schedule', { cron: '* * * * *', target });
    t.equal(minute.status, 200, 'every minute is exactly the default minimum');

    await setOverride(app, 'scheduler.min_interval_seconds', 'blob', sched.blobId, 3600);
    const hourly = await post(alice, sched.rev, 'create_schedule', { cron: '30 * * * *', target });
    t.equal(hourly.status, 200);
    const tooOften = await post(alice, sched.rev, 'update_schedule', {
      schedule_id: hourly.body.schedule.id,
      cron: '*/20 * * * *',
    });
    t.equal(tooOften.status, 400, 'update_schedule checks it too');
    t.same(tooOften.body.limit, { id: 'scheduler.min_interval_seconds', value: 3600 });
    t.equal(
      (await command(app, alice, sched.rev, 'get_schedule', { schedule_id: hourly.body.schedule.id })).schedule.cron,
      '30 * * * *',
      'unchanged',
    );

    // Daily at 2:00 is a day apart in UTC, but 23 hours across New York's spring-forward night.
    await setOverride(app, 'scheduler.min_interval_seconds', 'blob', sched.blobId, 86_400);
    t.equal(
      (await post(alice, sched.rev, 'create_schedule', { cron: '0 2 * * *', timezone: 'UTC', target })).status,
      200,
    );
    const dst = await post(alice, sched.rev, 'create_schedule', {
      cron: '0 2 * * *',
      timezone: 'America/New_York',
      target,
    });
    t.equal(dst.status, 400, 'the short day counts');
    t.match(dst.body.message, /82800 s apart/);
    await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'scheduler.min_interval_seconds'`);
    await db.query('DELETE FROM schedules WHERE revision_id = $1', [sched.rev]);
  },
);

t.test('scheduler.schedules_per_revision holds under concurrency; scheduler.enabled is checked', async (t) => {
  const own = await scheduler(alice, flow.orgId);
  await setOverride(app, 'scheduler.schedules_per_revision', 'blob', own.blobId, 3);
  const results = await Promise.all(
    Array.from({ length: 8 }, () => post(alice, own.rev, 'create_schedule', { cron: '0 0 * * *', target })),
  );
  t.equal(results.filter((r) => r.status === 200).length, 3);
  const refused = results.find((r) => r.status === 400)!;
  t.same(refused.body.limit, { id: 'scheduler.schedules_per_revision', value: 3, held: 3 });
  t.equal(await scheduleCount(own.rev), 3);

  await setOverride(app, 'scheduler.enabled', 'org', flow.orgId, false);
  const off = await post(alice, own.rev, 'update_schedule', {
    schedule_id: results.find((r) => r.status === 200)!.body.schedule.id,
    cron: '0 1 * * *',
  });
  t.equal(off.status, 200, 'an enabled schedule can still be edited');
  const other = await scheduler(alice);
  await setOverride(app, 'scheduler.enabled', 'org', other.orgId, false);
  const denied = await post(alice, other.rev, 'create_schedule', { cron: '0 0 * * *', target });
  t.equal(denied.status, 400);
  t.same(denied.body.limit, { id: 'scheduler.enabled', value: false });
  await db.query(`DELETE FROM limit_overrides WHERE limit_id = 'scheduler.enabled'`);
});

t.test('list_schedules pages ten at a time, newest first; an alias is unique in its revision', async (t) => {
  const own = await scheduler(alice, flow.orgId);
  await setOverride(app, 'scheduler.schedules_per_revision', 'blob', own.blobId, 30);
  const ids: string[] = [];
  for (let i = 0; i < 12; i++)
    ids.push(
      (await command(app, alice, own.rev, 'create_schedule', { alias: `s-${i}`, cron: `${i} 0 * * *`, target }))
        .schedule.id,
    );
  const first = await command(app, alice, own.rev, 'list_schedules', {});
  t.same(
    first.schedules.map((s: { id: string }) => s.id),
    ids.slice(2).reverse(),
  );
  const second = await command(app, alice, own.rev, 'list_schedules', { start_session_id: first.last_session_id });
  t.same(
    second.schedules.map((s: { id: string }) => s.id),
    ids.slice(0, 2).reverse(),
  );
  t.equal(second.last_session_id, null);
  const taken = await post(alice, own.rev, 'create_schedule', { alias: 's-3', cron: '0 0 * * *', target });
  t.equal(taken.status, 409);
  t.equal(taken.body.error, 'alias_taken');
});

t.test('list_schedules resumed from a schedule deleted between pages fails as a server error', async (t) => {
  const own = await scheduler(alice, flow.orgId);
  await setOverride(app, 'scheduler.schedules_per_revision', 'blob', own.blobId, 30);
  for (let i = 0; i < 11; i++) await command(app, alice, own.rev, 'create_schedule', { cron: `${i} 1 * * *`, target });
  const first = await command(app, alice, own.rev, 'list_schedules', {});
  await command(app, alice, own.rev, 'delete_schedule', { schedule_id: first.last_session_id });
  const resumed = await post(alice, own.rev, 'list_schedules', { start_session_id: first.last_session_id });
  t.equal(resumed.status, 500);
  t.equal(resumed.body.error, 'cursor_record_deleted');
});

t.test(
  'every update is checked as a create: a scheduler writer cannot drive a workflow they cannot write',
  async (t) => {
    const bob = await signInAnonymous(app);
    const grant = await call(app, 'POST', '/v1/members', {
      as: alice,
      body: { target: 'blob', target_id: sched.blobId, user_id: bob.user.id, role: 'write' },
    });
    t.ok(grant.status < 300, JSON.stringify(grant.body));
    const created = await command(app, alice, sched.rev, 'create_schedule', {
      cron: '0 3 * * *',
      target,
      input_data: { n: 1 },
      enabled: false,
    });
    const id = created.schedule.id;
    const changes: Array<[string, Record<string, unknown>]> = [
      ['input_data', { input_data: { n: 666 } }],
      ['cron', { cron: '* * * * *' }],
      ['timezone', { timezone: 'Europe/Paris' }],
      ['enabled', { enabled: true }],
      ['alias', { alias: 'mine' }],
      ['input_data removed', { input_data: null }],
    ];
    for (const [what, change] of changes) {
      const res = await post(bob, sched.rev, 'update_schedule', { schedule_id: id, ...change });
      t.equal(res.status, 403, what);
      t.match(res.body, { status: 'failure', error: 'forbidden', message: /target/ }, what);
    }
    const unchanged = (await command(app, alice, sched.rev, 'get_schedule', { schedule_id: id })).schedule;
    t.match(unchanged, {
      cron: '0 3 * * *',
      input_data: { n: 1 },
      enabled: false,
      alias: null,
      updated_by: alice.user.id,
    });

    // With write on the target too, the same update is one bob could have created: it passes, and
    // the fires now act as bob.
    const onTarget = await call(app, 'POST', '/v1/members', {
      as: alice,
      body: { target: 'blob', target_id: flow.blobId, user_id: bob.user.id, role: 'write' },
    });
    t.ok(onTarget.status < 300, JSON.stringify(onTarget.body));
    const updated = await command(app, bob, sched.rev, 'update_schedule', { schedule_id: id, input_data: { n: 2 } });
    t.match(updated.schedule, { input_data: { n: 2 }, created_by: alice.user.id, updated_by: bob.user.id });

    await db.query('DELETE FROM schedules WHERE revision_id = $1', [sched.rev]);
  },
);

t.test('a time zone is stored by its canonical name, whatever its letter case', async (t) => {
  const created = await command(app, alice, sched.rev, 'create_schedule', {
    cron: '0 3 * * *',
    timezone: 'europe/PARIS',
    target,
  });
  t.equal(created.schedule.timezone, 'Europe/Paris');
  const updated = await command(app, alice, sched.rev, 'update_schedule', {
    schedule_id: created.schedule.id,
    timezone: 'AMERICA/new_york',
  });
  t.equal(updated.schedule.timezone, 'America/New_York');
  await db.query('DELETE FROM schedules WHERE revision_id = $1', [sched.rev]);
});

t.test('every second in a zone with clock changes is refused by the floor, with its limit object', async (t) => {
  for (const name of ['create_schedule', 'update_schedule'] as const) {
    const body =
      name === 'create_schedule'
        ? { cron: '* * * * * *', timezone: 'America/New_York', target }
        : {
            schedule_id: (await command(app, alice, sched.rev, 'create_schedule', { cron: '0 3 * * *', target }))
              .schedule.id,
            cron: '* * * * * *',
            timezone: 'America/New_York',
          };
    const res = await post(alice, sched.rev, name, body);
    t.equal(res.status, 400, name);
    t.same(res.body.limit, { id: 'scheduler.min_interval_seconds', value: 60 }, name);
    t.match(res.body.message, /1 s apart/, name);
  }
  await db.query('DELETE FROM schedules WHERE revision_id = $1', [sched.rev]);
});
