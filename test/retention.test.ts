import pg from 'pg';
import t, { type Test } from 'tap';
import { buildOpsApp } from '../control-plane/ops/app.ts';
import { startRetentionTimer, sweepIfDue } from '../runner/retention-timer.ts';
import { RETENTION_LOCK, runRecordedSweep } from '../shared/retention/recorded-sweep.ts';
import { pauseAfterBatch } from '../shared/retention/pacing.ts';
import { runRetentionSweep } from '../shared/retention/sweep.ts';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';

const { app, db, config, databaseUrl, boss } = await buildTestApp(t);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const ops = await buildOpsApp({ config, db, boss, logger: false });
t.teardown(() => ops.close());

const GRAPH = { start: 'nap', nodes: { nap: { processor: 'logic.sleep', config: { seconds: 1 } } } };
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Place {
  orgId: string;
  blobId: string;
  rev: string;
  sessionId: string;
  definitionId: string;
}

async function command(
  as: Caller,
  rev: string,
  name: string,
  params: Record<string, unknown>,
): Promise<{ status: number; body: any }> {
  const { status, body } = await call(app, 'POST', `/v1/revisions/${rev}/${name}`, { as, body: params });
  return { status, body };
}

async function ok(as: Caller, rev: string, name: string, params: Record<string, unknown>): Promise<any> {
  const res = await command(as, rev, name, params);
  if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A workflow blob with a session and a definition, in a new organization or in `orgId`. */
async function place(as: Caller, orgId?: string): Promise<Place> {
  const org = orgId ?? (await createOrg(app, as)).id;
  const { blob, revision } = await createBlob(app, as, org);
  const session = await ok(as, revision.id, 'create_session', {});
  const definition = await ok(as, revision.id, 'create_definition', {
    alias: 'flow',
    category: 'workflow',
    graph: GRAPH,
  });
  return {
    orgId: org,
    blobId: blob.id,
    rev: revision.id,
    sessionId: session.session.id,
    definitionId: definition.definition.id,
  };
}

/**
 * An execution written directly, with one execution event. `endedDaysAgo` null: still running
 * (created `createdDaysAgo` ago). Returns its id.
 */
async function insertExecution(
  at: Place,
  endedDaysAgo: number | null,
  options: { status?: string; createdDaysAgo?: number; endedAt?: string } = {},
): Promise<string> {
  const status = options.status ?? (endedDaysAgo === null ? 'running' : 'succeeded');
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO executions (session_id, org_id, definition_id, graph, limits, status, created_at, ended_at)
     VALUES ($1::uuid, $2::uuid, $3::uuid, $4::jsonb, '{}'::jsonb, $5::text,
             now() - make_interval(days => $6::int),
             COALESCE($8::timestamptz, now() - make_interval(days => $7::int)))
     RETURNING id`,
    [
      at.sessionId,
      at.orgId,
      at.definitionId,
      JSON.stringify(GRAPH),
      status,
      options.createdDaysAgo ?? (endedDaysAgo ?? 0) + 1,
      endedDaysAgo,
      options.endedAt ?? null,
    ],
  );
  const id = rows[0]!.id;
  await db.query(
    `INSERT INTO execution_events (execution_id, session_id, kind) VALUES ($1::uuid, $2::uuid, 'execution.started')`,
    [id, at.sessionId],
  );
  return id;
}

async function exists(id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM executions WHERE id = $1::uuid', [id]);
  return rows.length === 1;
}

async function eventsOf(id: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM execution_events WHERE execution_id = $1::uuid',
    [id],
  );
  return rows[0]!.n;
}

async function gql(query: string, variables: Record<string, unknown> = {}): Promise<{ status: number; body: any }> {
  const res = await ops.inject({
    method: 'POST',
    url: '/graphql',
    headers: { authorization: `Bearer ${config.secrets.OPS_TOKEN}` },
    payload: { query, variables },
  });
  return { status: res.statusCode, body: res.json() };
}

const SWEEP_FIELDS = 'id trigger status startedAt finishedAt executionsRemoved runsRemoved error';

/** Holds the sweep lock from a connection of the test's own, as another process's sweep would. */
async function holdSweepLock(t: Test): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query('SELECT pg_advisory_lock($1::int, $2::int)', [...RETENTION_LOCK]);
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    await client.end();
  };
  t.teardown(release);
  return release;
}

const home = await place(alice);

t.test('removes a finished execution past 90 days with its events; keeps younger and running ones', async (t) => {
  const old = await insertExecution(home, 91);
  const failed = await insertExecution(home, 200, { status: 'failed' });
  const cancelled = await insertExecution(home, 91, { status: 'cancelled' });
  const young = await insertExecution(home, 89);
  const running = await insertExecution(home, null, { createdDaysAgo: 400 });
  const sleeping = await insertExecution(home, null, { status: 'sleeping', createdDaysAgo: 400 });
  const queued = await insertExecution(home, null, { status: 'queued', createdDaysAgo: 400 });
  t.equal(await eventsOf(old), 1);
  // Session events name the execution but belong to the session's stream: they stay.
  await db.query(
    `INSERT INTO session_events (session_id, execution_id, kind) VALUES ($1::uuid, $2::uuid, 'execution.finished')`,
    [home.sessionId, old],
  );

  t.same(await runRetentionSweep(db), { executions_removed: 3, runs_removed: 0, idempotency_keys_removed: 0 });
  for (const id of [old, failed, cancelled]) {
    t.notOk(await exists(id), 'past retention: removed');
    t.equal(await eventsOf(id), 0, 'with its execution events');
  }
  for (const id of [young, running, sleeping, queued]) t.ok(await exists(id), 'kept');
  t.equal(await eventsOf(young), 1);
  const got = await command(alice, home.rev, 'get_execution', { execution_id: old });
  t.equal(got.status, 404);
  t.equal(got.body.error, 'not_found');
  const { rows } = await db.query('SELECT 1 FROM session_events WHERE execution_id = $1::uuid', [old]);
  t.equal(rows.length, 1, 'the session event stays');

  t.same(
    await runRetentionSweep(db),
    { executions_removed: 0, runs_removed: 0, idempotency_keys_removed: 0 },
    'a second sweep finds nothing',
  );
});

t.test('age counts from the end, not the creation; `now` moves the reference', async (t) => {
  const lateEnd = await insertExecution(home, 10, { createdDaysAgo: 300 });
  const nearly = await insertExecution(home, 89);
  t.same(await runRetentionSweep(db), { executions_removed: 0, runs_removed: 0, idempotency_keys_removed: 0 });
  t.ok(await exists(lateEnd), 'created 300 days ago, ended 10: kept');
  t.ok(await exists(nearly));
  // Every earlier row of this file is now either removed, running, or younger than 89 days.
  const inTwoDays = new Date(Date.now() + 2 * 86_400_000);
  t.same(
    await runRetentionSweep(db, { now: inTwoDays }),
    { executions_removed: 2, runs_removed: 0, idempotency_keys_removed: 0 },
    "this one and the first test's 89-day-old one",
  );
  t.notOk(await exists(nearly), '89 days old plus two');
  t.ok(await exists(lateEnd));
});

t.test('retention is resolved per blob at sweep time: nearest override wins; null keeps forever', async (t) => {
  const org = (await createOrg(app, alice)).id;
  const short = await place(alice, org);
  const sibling = await place(alice, org);
  const forever = await place(alice, org);
  const shortOld = await insertExecution(short, 31);
  const shortYoung = await insertExecution(short, 29);
  const siblingOld = await insertExecution(sibling, 31);
  const foreverOld = await insertExecution(forever, 400);
  const elsewhere = await insertExecution(home, 31);
  await setOverride(app, 'workflow.execution_retention_days', 'blob', forever.blobId, null);
  // Set after the executions were created and ended: the value in force at the sweep applies.
  await setOverride(app, 'workflow.execution_retention_days', 'blob', short.blobId, 30);
  t.same(await runRetentionSweep(db), { executions_removed: 1, runs_removed: 0, idempotency_keys_removed: 0 });
  t.notOk(await exists(shortOld), '30-day override: a 31-day-old execution goes');
  t.ok(await exists(shortYoung));
  t.ok(await exists(siblingOld), 'another blob of the same organization keeps the default');
  t.ok(await exists(elsewhere));

  // An organization's override reaches its blobs; a blob's null beats it.
  await setOverride(app, 'workflow.execution_retention_days', 'org', org, 30);
  t.same(await runRetentionSweep(db), { executions_removed: 1, runs_removed: 0, idempotency_keys_removed: 0 });
  t.notOk(await exists(siblingOld), "the organization's 30 days now apply to the sibling");
  t.ok(await exists(foreverOld), 'null: kept forever, even at 400 days');
  t.ok(await exists(elsewhere), 'other organizations keep the default');

  // Zero days: everything finished goes at the next sweep.
  await setOverride(app, 'workflow.execution_retention_days', 'blob', short.blobId, 0);
  const justEnded = await insertExecution(short, 0, { endedAt: new Date(Date.now() - 1000).toISOString() });
  t.same(await runRetentionSweep(db), { executions_removed: 2, runs_removed: 0, idempotency_keys_removed: 0 });
  t.notOk(await exists(justEnded));
  t.notOk(await exists(shortYoung));
});

t.test("an owner's override reaches every blob of the organizations it owns, and only those", async (t) => {
  const bobs = await place(bob);
  const bobOld = await insertExecution(bobs, 6);
  const aliceOld = await insertExecution(home, 6);
  await setOverride(app, 'workflow.execution_retention_days', 'user', bob.user.id, 5);
  t.same(await runRetentionSweep(db), { executions_removed: 1, runs_removed: 0, idempotency_keys_removed: 0 });
  t.notOk(await exists(bobOld));
  t.ok(await exists(aliceOld));
});

t.test('a stored override that is no longer valid is skipped as resolution skips it', async (t) => {
  const mine = await place(alice);
  const old = await insertExecution(mine, 91);
  const young = await insertExecution(mine, 40);
  await setOverride(app, 'workflow.execution_retention_days', 'blob', mine.blobId, 'thirty');
  await setOverride(app, 'workflow.execution_retention_days', 'org', mine.orgId, -5);
  t.same(
    await runRetentionSweep(db),
    { executions_removed: 1, runs_removed: 0, idempotency_keys_removed: 0 },
    'the default applies',
  );
  t.notOk(await exists(old));
  t.ok(await exists(young));
});

t.test('batches walk past kept rows and equal end times', async (t) => {
  const kept = await place(alice);
  await setOverride(app, 'workflow.execution_retention_days', 'blob', kept.blobId, null);
  const mine = await place(alice);
  // The oldest rows are kept ones, so early batches remove nothing and must not end the sweep.
  const keptIds = [];
  for (let i = 0; i < 5; i++) keptIds.push(await insertExecution(kept, 500 + i));
  const sameEnd = new Date(Date.now() - 95 * 86_400_000).toISOString();
  const due = [];
  for (let i = 0; i < 5; i++) due.push(await insertExecution(mine, 0, { endedAt: sameEnd }));
  for (let i = 0; i < 2; i++) due.push(await insertExecution(mine, 100 + i));
  t.same(await runRetentionSweep(db, { batchSize: 2 }), {
    executions_removed: 7,
    runs_removed: 0,
    idempotency_keys_removed: 0,
  });
  for (const id of due) t.notOk(await exists(id));
  for (const id of keptIds) t.ok(await exists(id));
  await t.rejects(runRetentionSweep(db, { batchSize: 0 }), RangeError);
});

t.test("a batch's execution events go in one statement, not one per execution", async (t) => {
  const mine = await place(alice);
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) ids.push(await insertExecution(mine, 100));
  interface Triggered {
    'Trigger Name': string;
    'Constraint Name'?: string;
    Calls: number;
  }
  // The shape of a retention batch: one DELETE of many executions. EXPLAIN ANALYZE runs it and
  // counts each trigger's calls (a foreign key's cascade is a trigger called once per row).
  const triggers = await db.transaction(async (tx) => {
    const { rows } = await tx.query<{ 'QUERY PLAN': [{ Triggers: Triggered[] }] }>(
      'EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM executions WHERE id = ANY($1::uuid[])',
      [ids],
    );
    return rows[0]!['QUERY PLAN'][0].Triggers;
  });
  t.notOk(
    triggers.some((tr) => tr['Constraint Name'] === 'execution_events_execution_id_fkey'),
    'no per-row cascade into execution_events',
  );
  t.same(
    triggers.filter((tr) => tr['Trigger Name'] === 'execution_events_removed').map((tr) => tr.Calls),
    [1],
    'one statement-level removal',
  );
  for (const id of ids) t.equal(await eventsOf(id), 0, 'the events are gone');

  // A session's removal takes its executions' events too (the cascade reaches executions, whose
  // removal statement removes the events).
  const other = await place(alice);
  const kept = await insertExecution(other, 1);
  const { rows } = await db.query<{ session_id: string }>('SELECT session_id FROM executions WHERE id = $1::uuid', [
    kept,
  ]);
  await db.query('DELETE FROM sessions WHERE id = $1::uuid', [rows[0]!.session_id]);
  t.equal(await eventsOf(kept), 0, "a removed session's execution events are gone");
});

t.test("a batch's re-run links are cleared in one statement, not two per execution", async (t) => {
  const mine = await place(alice);
  await runRetentionSweep(db, { dutyPercent: 100 }); // what earlier tests left past retention
  // Ten originals past retention, each re-run by a young execution, and one young original whose
  // re-run is past retention: the links are cleared from whichever side stays.
  const originals: string[] = [];
  const reruns: string[] = [];
  for (let i = 0; i < 10; i++) {
    const original = await insertExecution(mine, 100, { status: 'failed' });
    const rerun = await insertExecution(mine, 1);
    await db.query('UPDATE executions SET rerun_of = $1::uuid WHERE id = $2::uuid', [original, rerun]);
    await db.query('UPDATE executions SET rerun_by = $2::uuid WHERE id = $1::uuid', [original, rerun]);
    originals.push(original);
    reruns.push(rerun);
  }
  const youngOriginal = await insertExecution(mine, 1, { status: 'failed' });
  const oldRerun = await insertExecution(mine, 100);
  await db.query('UPDATE executions SET rerun_of = $1::uuid WHERE id = $2::uuid', [youngOriginal, oldRerun]);
  await db.query('UPDATE executions SET rerun_by = $2::uuid WHERE id = $1::uuid', [youngOriginal, oldRerun]);

  interface Triggered {
    'Trigger Name': string;
    'Constraint Name'?: string;
    Calls: number;
  }
  // A retention batch's shape, rolled back: which triggers run, and how often (a foreign key's
  // ON DELETE SET NULL is a trigger called once per removed row).
  const triggers = await db
    .transaction(async (tx) => {
      const { rows } = await tx.query<{ 'QUERY PLAN': [{ Triggers: Triggered[] }] }>(
        'EXPLAIN (ANALYZE, FORMAT JSON) DELETE FROM executions WHERE id = ANY($1::uuid[])',
        [[...originals, oldRerun]],
      );
      throw Object.assign(new Error('roll back'), { triggers: rows[0]!['QUERY PLAN'][0].Triggers });
    })
    .catch((error: { triggers?: Triggered[] }) => error.triggers ?? []);
  t.same(
    triggers.filter((tr) => tr['Constraint Name'] !== undefined).map((tr) => tr['Constraint Name']),
    [],
    'no per-row constraint trigger',
  );
  t.same(
    triggers.filter((tr) => tr['Trigger Name'] === 'executions_rerun_unlinked').map((tr) => tr.Calls),
    [1],
    'one statement-level unlinking',
  );

  t.same(await runRetentionSweep(db, { batchSize: 4 }), {
    executions_removed: 11,
    runs_removed: 0,
    idempotency_keys_removed: 0,
  });
  for (const id of reruns) {
    const got = await ok(alice, mine.rev, 'get_execution', { execution_id: id });
    t.equal(got.execution.rerun_of, null, "a removed original's re-run names none");
  }
  const young = await ok(alice, mine.rev, 'get_execution', { execution_id: youngOriginal });
  t.equal(young.execution.rerun_by, null, 'an original whose re-run was removed names none');
});

t.test('the sweep pauses after each batch for its duty cycle, never after the last', async (t) => {
  const mine = await place(alice);
  for (let i = 0; i < 3; i++) await insertExecution(mine, 100);
  // Everything else past retention goes first, so the paced sweep below sees only these three.
  await runRetentionSweep(db, { dutyPercent: 100 });
  for (let i = 0; i < 3; i++) await insertExecution(mine, 100);

  const pauses: number[] = [];
  let batches = 0;
  const counts = await runRetentionSweep(db, {
    batchSize: 1,
    dutyPercent: 20,
    onPause: (ms) => pauses.push(ms),
    onProgress: () => batches++,
  });
  t.equal(counts.executions_removed, 3);
  // At least three full batches of executions (kept rows of earlier tests may add more), then
  // the last one; one batch each of runs and keys.
  t.ok(batches >= 6);
  t.equal(pauses.length, batches - 3, 'one pause after each batch but the last of each kind');
  t.ok(
    pauses.every((ms) => ms > 0),
    'each pause lasts four times its batch (duty 20 %)',
  );
  t.equal(pauseAfterBatch(40, 20), 160);
  t.equal(pauseAfterBatch(40, 100), 0);

  const none: number[] = [];
  for (let i = 0; i < 3; i++) await insertExecution(mine, 100);
  await runRetentionSweep(db, { batchSize: 1, dutyPercent: 100, onPause: (ms) => none.push(ms) });
  t.same(none, [], 'duty 100: back to back');
  await t.rejects(runRetentionSweep(db, { dutyPercent: 0 }), RangeError);
});

t.test('workflow.executions_per_session: removing an execution frees its slot', async (t) => {
  const mine = await place(alice);
  await setOverride(app, 'workflow.executions_per_session', 'blob', mine.blobId, 2);
  const params = { session_id: mine.sessionId, definition_id: mine.definitionId };
  const first = (await ok(alice, mine.rev, 'create_execution', params)).execution;
  const second = (await ok(alice, mine.rev, 'create_execution', params)).execution;
  await ok(alice, mine.rev, 'cancel_execution', { execution_id: first.id });
  await ok(alice, mine.rev, 'cancel_execution', { execution_id: second.id });
  const refused = await command(alice, mine.rev, 'create_execution', params);
  t.equal(refused.status, 400);
  t.equal(refused.body.error, 'limit_exceeded');
  t.same(refused.body.limit, { id: 'workflow.executions_per_session', value: 2, held: 2 });

  // The first ended 91 days ago.
  await db.query(`UPDATE executions SET ended_at = now() - interval '91 days' WHERE id = $1::uuid`, [first.id]);
  t.same(await runRetentionSweep(db), { executions_removed: 1, runs_removed: 0, idempotency_keys_removed: 0 });
  const session = await ok(alice, mine.rev, 'get_session', { session_id: mine.sessionId });
  t.equal(session.session.held['workflow.executions_per_session'], 1, 'held drops');
  const again = await command(alice, mine.rev, 'create_execution', params);
  t.equal(again.status, 200, 'a create refused at the quota succeeds after the sweep');
  t.equal(again.body.execution.status, 'queued');
});

t.test('ops API: runRetentionSweep runs it now and retentionSweeps shows the history', async (t) => {
  const old = await insertExecution(home, 120);
  const ran = await gql(`mutation { runRetentionSweep { ${SWEEP_FIELDS} } }`);
  t.equal(ran.status, 200);
  t.notOk(ran.body.errors);
  const sweep = ran.body.data.runRetentionSweep;
  t.match(sweep, {
    id: /^[0-9]+$/,
    trigger: 'ops',
    status: 'completed',
    startedAt: ISO,
    finishedAt: ISO,
    executionsRemoved: 1,
    runsRemoved: 0,
    error: null,
  });
  t.notOk(await exists(old));

  const listed = await gql(`{ retentionSweeps(limit: 1) { ${SWEEP_FIELDS} } }`);
  t.same(listed.body.data.retentionSweeps, [sweep], 'newest first, as recorded');
  const { rows } = await db.query(
    'SELECT trigger, outcome, executions_removed, runs_removed FROM retention_sweeps WHERE id = $1::bigint',
    [sweep.id],
  );
  t.same(rows, [{ trigger: 'ops', outcome: 'completed', executions_removed: 1, runs_removed: 0 }]);

  for (const limit of [0, 101]) {
    const bad = await gql(`{ retentionSweeps(limit: ${limit}) { id } }`);
    t.equal(bad.body.errors[0].extensions.code, 'invalid_argument', `limit ${limit}`);
  }
});

t.test("one sweep at a time: a held lock refuses the mutation and skips the timer's check", async (t) => {
  const old = await insertExecution(home, 150);
  const release = await holdSweepLock(t);

  const refused = await gql(`mutation { runRetentionSweep { id } }`);
  t.equal(refused.status, 200);
  t.equal(refused.body.errors[0].extensions.code, 'sweep_in_progress');
  t.same(await sweepIfDue(db, { dueAfterSeconds: 0 }), { ran: false, reason: 'in_progress' });
  t.ok(await exists(old), 'nothing removed while another sweep holds the lock');

  // An unfinished row is running while the lock is held, and abandoned once its holder is gone.
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO retention_sweeps (trigger) VALUES ('daily') RETURNING id::text AS id`,
  );
  const statusOf = async () =>
    (await gql(`{ retentionSweeps(limit: 100) { id status } }`)).body.data.retentionSweeps.find(
      (s: any) => s.id === rows[0]!.id,
    ).status;
  t.equal(await statusOf(), 'running');
  await release();
  t.equal(await statusOf(), 'abandoned');

  const after = await gql(`mutation { runRetentionSweep { executionsRemoved } }`);
  t.same(after.body.data.runRetentionSweep, { executionsRemoved: 1 });
});

t.test('concurrent sweeps never count a removal twice', async (t) => {
  const ids: string[] = [];
  for (let i = 0; i < 40; i++) ids.push(await insertExecution(home, 100 + i));
  const results = await Promise.all([
    gql(`mutation { runRetentionSweep { executionsRemoved } }`),
    gql(`mutation { runRetentionSweep { executionsRemoved } }`),
    runRecordedSweep(db, { trigger: 'daily', batchSize: 3 }),
    runRecordedSweep(db, { trigger: 'daily', batchSize: 3 }),
  ]);
  let total = 0;
  let sweeps = 0;
  for (const result of results) {
    if ('status' in result) {
      if (result.body.errors) t.equal(result.body.errors[0].extensions.code, 'sweep_in_progress');
      else {
        total += result.body.data.runRetentionSweep.executionsRemoved;
        sweeps += 1;
      }
    } else if (result.ran) {
      total += result.sweep.executions_removed;
      sweeps += 1;
    } else {
      t.equal(result.reason, 'in_progress');
    }
  }
  t.ok(sweeps >= 1);
  t.equal(total, 40, 'each removal counted once');
  for (const id of ids) t.notOk(await exists(id));
  const { rows } = await db.query<{ n: number; running: number }>(
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE outcome IS NULL)::int AS running FROM retention_sweeps WHERE started_at > now() - interval '1 minute'`,
  );
  t.equal(rows[0]!.running, 1, 'only the abandoned row of the previous test is unfinished');
});

t.test('the daily check sweeps when due, once; a stopped sweep is recorded interrupted', async (t) => {
  const old = await insertExecution(home, 95);
  t.same(await sweepIfDue(db), { ran: false, reason: 'not_due' }, 'a sweep completed within the day');
  t.ok(await exists(old));
  const due = await sweepIfDue(db, { dueAfterSeconds: 0 });
  t.match(due, { ran: true, sweep: { trigger: 'daily', status: 'completed', executions_removed: 1, runs_removed: 0 } });
  t.notOk(await exists(old));

  const aborted = new AbortController();
  aborted.abort(new Error('stopping'));
  await t.rejects(sweepIfDue(db, { dueAfterSeconds: 0, signal: aborted.signal }), { message: 'stopping' });
  const { rows } = await db.query(
    'SELECT trigger, outcome, error, finished_at IS NOT NULL AS finished FROM retention_sweeps ORDER BY id DESC LIMIT 1',
  );
  t.same(rows, [{ trigger: 'daily', outcome: 'interrupted', error: null, finished: true }]);
});

t.test('the runner timer checks at once and stops cleanly', async (t) => {
  const old = await insertExecution(home, 97);
  const { rows: before } = await db.query<{ id: string }>(
    'SELECT coalesce(max(id), 0)::text AS id FROM retention_sweeps',
  );
  const logged: string[] = [];
  const log = {
    info: (_f: object, m: string) => void logged.push(m),
    error: (_f: object, m: string) => void logged.push(m),
  };
  const timer = startRetentionTimer(db, { log, dueAfterSeconds: 0, checkEverySeconds: 3600 });
  t.teardown(() => timer.stop());
  let swept: any[] = [];
  for (let i = 0; i < 500 && swept.length === 0; i++) {
    swept = (
      await db.query(
        `SELECT trigger, outcome, executions_removed FROM retention_sweeps WHERE id > $1::bigint AND outcome IS NOT NULL`,
        [before[0]!.id],
      )
    ).rows;
    if (swept.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await timer.stop();
  t.same(swept, [{ trigger: 'daily', outcome: 'completed', executions_removed: 1 }]);
  t.same(logged, ['retention sweep completed']);
  t.notOk(await exists(old));
});
