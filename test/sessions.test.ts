import t from 'tap';
import { appendSessionEvent } from '../shared/events/store.ts';
import { findActiveSession } from '../control-plane/workflow/session-ref.ts';
import { reapDeletingSessions, startSessionReaper } from '../control-plane/workflow/session-reaper.ts';
import { buildTestApp, setOverride, signInAnonymous, type Caller } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import { sameRefusal, transports } from './helpers/session-commands.ts';
import { holdSessionRow, insertExecution, waitUntilNone } from './helpers/session-fixtures.ts';

const { app, db, databaseUrl } = await buildTestApp(t);
const io = transports(t, app);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const org = await createOrg(app, alice);
const privateFlow = await createBlob(app, alice, org.id);
const publicFlow = await createBlob(app, alice, org.id, { visibility: 'public' });
const rev = privateFlow.revision.id as string;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Creates a session over REST; throws unless it succeeds. */
async function newSession(revisionId: string, alias?: string, as: Caller = alice): Promise<Record<string, any>> {
  const res = await io.rest(as, revisionId, 'create_session', alias === undefined ? {} : { alias });
  if (res.status !== 200) throw new Error(`create_session: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session;
}

/** A fresh workflow revision of Alice's, for tests that count or list everything in one. */
async function freshRevision(): Promise<{ blobId: string; revisionId: string }> {
  const { blob, revision } = await createBlob(app, alice, org.id);
  return { blobId: blob.id, revisionId: revision.id };
}

async function sessionEvents(sessionId: string): Promise<string[]> {
  const { rows } = await db.query<{ kind: string }>(
    'SELECT kind FROM session_events WHERE session_id = $1::uuid ORDER BY id',
    [sessionId],
  );
  return rows.map((r) => r.kind);
}

t.test('create_session on both transports: the session record, with and without an alias', async (t) => {
  const rest = await io.rest(alice, rev, 'create_session', { alias: 'first-session' });
  t.equal(rest.status, 200);
  t.same(Object.keys(rest.body), ['status', 'session']);
  t.equal(rest.body.status, 'success');
  const session = rest.body.session;
  t.same(Object.keys(session).sort(), ['alias', 'created_at', 'id', 'revision_id', 'status']);
  t.match(session, { alias: 'first-session', revision_id: rev, status: 'active', id: UUID, created_at: ISO });

  const rpc = await io.rpc(alice, rev, 'create_session', {});
  t.same(Object.keys(rpc), ['jsonrpc', 'id', 'result']);
  t.same(Object.keys(rpc.result), ['session']);
  t.match(rpc.result.session, { alias: null, revision_id: rev, status: 'active', id: UUID, created_at: ISO });
  t.not(rpc.result.session.id, session.id);

  t.same(await sessionEvents(session.id), ['session.created'], 'session.created is recorded with the session');
});

t.test('create_session refusals: taken alias 409, bad alias 400, unknown field 400', async (t) => {
  await newSession(rev, 'taken-alias');
  sameRefusal(t, await io.both(alice, rev, 'create_session', { alias: 'taken-alias' }), 409, 'alias_taken');
  sameRefusal(
    t,
    await io.both(alice, rev, 'create_session', { alias: '0b9a5b8e-0000-4000-8000-000000000000' }),
    400,
    'invalid_request_body',
  );
  sameRefusal(t, await io.both(alice, rev, 'create_session', { alias: 'x' }), 400, 'invalid_request_body');
  sameRefusal(t, await io.both(alice, rev, 'create_session', { alias: null }), 400, 'invalid_request_body');
  sameRefusal(t, await io.both(alice, rev, 'create_session', { name: 'n' }), 400, 'invalid_request_body');
  // The same alias in another revision is another namespace.
  t.equal((await newSession(publicFlow.revision.id, 'taken-alias')).alias, 'taken-alias');
});

t.test('workflow.sessions_per_revision: exact limit object, slot freed as a session enters deleting', async (t) => {
  const { blobId, revisionId } = await freshRevision();
  await setOverride(app, 'workflow.sessions_per_revision', 'blob', blobId, 2);
  const first = await newSession(revisionId, 'quota-one');
  await newSession(revisionId);
  const limit = { id: 'workflow.sessions_per_revision', value: 2, held: 2 };
  sameRefusal(t, await io.both(alice, revisionId, 'create_session', {}), 400, 'limit_exceeded', { limit });

  // Keep the row from being removed, so the slot is shown free while the session still exists.
  const release = await holdSessionRow(t, databaseUrl, first.id);
  const deleted = await io.rest(alice, revisionId, 'delete_session', { session_id: first.id });
  t.equal(deleted.status, 200);
  const third = await io.rpc(alice, revisionId, 'create_session', {});
  t.equal(third.result?.session.status, 'active', 'the deleting session no longer holds a slot');
  sameRefusal(t, await io.both(alice, revisionId, 'create_session', {}), 400, 'limit_exceeded', { limit });
  const got = await io.rest(alice, revisionId, 'get_session', { session_id: first.id });
  t.equal(got.body.session.status, 'deleting');
  await release();

  // An override on the organization applies too; the blob's, nearer, wins while it exists.
  await db.query(`DELETE FROM limit_overrides WHERE target_type = 'blob' AND target_id = $1::uuid`, [blobId]);
  await setOverride(app, 'workflow.sessions_per_revision', 'org', org.id, 1);
  sameRefusal(t, await io.both(alice, revisionId, 'create_session', {}), 400, 'limit_exceeded', {
    limit: { id: 'workflow.sessions_per_revision', value: 1, held: 2 },
  });
  await db.query(`DELETE FROM limit_overrides WHERE target_type = 'org' AND target_id = $1::uuid`, [org.id]);
});

t.test('the active-session count on the revision follows every way a session comes and goes', async (t) => {
  const { revisionId } = await freshRevision();
  const counted = async () => {
    const { rows } = await db.query<{ kept: number; live: number }>(
      `SELECT r.active_sessions AS kept,
              (SELECT count(*)::int FROM sessions s WHERE s.revision_id = r.id AND s.status = 'active') AS live
         FROM revisions r WHERE r.id = $1::uuid`,
      [revisionId],
    );
    return rows[0]!;
  };
  const made = await Promise.all(Array.from({ length: 6 }, () => newSession(revisionId)));
  t.same(await counted(), { kept: 6, live: 6 }, 'concurrent creates each counted once');
  for (const session of made.slice(0, 2)) {
    const res = await io.rest(alice, revisionId, 'delete_session', { session_id: session.id });
    t.equal(res.status, 200);
  }
  await waitUntilNone(db, `SELECT 1 FROM sessions WHERE revision_id = $1::uuid AND status = 'deleting'`, [revisionId]);
  t.same(await counted(), { kept: 4, live: 4 }, 'a deleted session leaves the count as it enters deleting');
  // A session removed while still active (its revision's cascade, or by hand) is taken off too.
  await db.query('DELETE FROM sessions WHERE id = $1::uuid', [made[5]!.id]);
  t.same(await counted(), { kept: 3, live: 3 });
  const revision = await app.inject({
    method: 'GET',
    url: `/v1/revisions/${revisionId}`,
    headers: { authorization: `Bearer ${alice.token}` },
  });
  t.equal(revision.json().revision.held['workflow.sessions_per_revision'], 3, "Get Revision's held reads the count");
});

t.test('get_session by id and by alias, with the held map of the session quotas', async (t) => {
  const session = await newSession(rev, 'held-map');
  const expected = {
    ...session,
    held: { 'workflow.executions_per_session': 0, 'workflow.session_objects_per_session': 0 },
  };
  const byId = await io.both(alice, rev, 'get_session', { session_id: session.id });
  t.equal(byId.rest.status, 200);
  t.same(byId.rest.body, { status: 'success', session: expected });
  t.same(byId.rpc.result, { session: expected });
  const byAlias = await io.rest(alice, rev, 'get_session', { session_id: 'held-map' });
  t.same(byAlias.body.session, expected);

  await insertExecution(db, session.id, org.id);
  await insertExecution(db, session.id, org.id);
  const after = await io.rpc(alice, rev, 'get_session', { session_id: session.id });
  t.equal(after.result.session.held['workflow.executions_per_session'], 2);
});

t.test('not found: unknown id or alias, a session of another revision, an unreadable revision', async (t) => {
  const elsewhere = await newSession(publicFlow.revision.id);
  for (const sessionId of [
    '0b9a5b8e-0000-4000-8000-000000000000',
    'no-such-session',
    elsewhere.id,
    elsewhere.id.toUpperCase(),
  ]) {
    for (const command of ['get_session', 'delete_session']) {
      sameRefusal(t, await io.both(alice, rev, command, { session_id: sessionId }), 404, 'not_found');
    }
  }
  const mine = await newSession(rev);
  for (const [command, params] of [
    ['create_session', {}],
    ['get_session', { session_id: mine.id }],
    ['delete_session', { session_id: mine.id }],
    ['list_sessions', {}],
  ] as const) {
    sameRefusal(t, await io.both(bob, rev, command, params), 404, 'not_found');
  }
});

t.test('read standing reads; changing needs write (403)', async (t) => {
  const pubRev = publicFlow.revision.id;
  const session = await newSession(pubRev);
  t.equal((await io.rest(bob, pubRev, 'get_session', { session_id: session.id })).status, 200);
  t.equal((await io.rpc(bob, pubRev, 'list_sessions', {})).result.sessions.length > 0, true);
  sameRefusal(t, await io.both(bob, pubRev, 'create_session', {}), 403, 'forbidden');
  sameRefusal(t, await io.both(bob, pubRev, 'delete_session', { session_id: session.id }), 403, 'forbidden');
});

t.test(
  'delete_session: deleting at once, shown as deleting until removed, then gone with everything in it',
  async (t) => {
    const session = await newSession(rev, 'doomed');
    const executionId = await insertExecution(db, session.id, org.id);
    await appendSessionEvent(db, { sessionId: session.id, kind: 'test.marker' });
    const release = await holdSessionRow(t, databaseUrl, session.id);

    const rest = await io.rest(alice, rev, 'delete_session', { session_id: 'doomed' });
    t.equal(rest.status, 200);
    t.same(rest.body, { status: 'success', session: { ...session, status: 'deleting' } });
    t.same(await sessionEvents(session.id), ['session.created', 'test.marker', 'session.deleting']);

    const got = await io.both(alice, rev, 'get_session', { session_id: session.id });
    t.equal(got.rest.body.session.status, 'deleting');
    t.equal(got.rpc.result.session.status, 'deleting');
    t.equal(got.rest.body.session.held['workflow.executions_per_session'], 1);
    const listed = await io.rest(alice, rev, 'list_sessions', {});
    t.equal(listed.body.sessions.find((s: any) => s.id === session.id)?.status, 'deleting', 'listed until removed');

    // A deleting session takes no new content.
    await t.rejects(findActiveSession(db, rev, session.id), { code: 'conflict', status: 409 });

    // Deleting again answers the same, over JSON-RPC too, and records nothing more.
    const again = await io.rpc(alice, rev, 'delete_session', { session_id: session.id });
    t.same(again.result, { session: { ...session, status: 'deleting' } });
    t.same(await sessionEvents(session.id), ['session.created', 'test.marker', 'session.deleting']);

    await release();
    await waitUntilNone(db, 'SELECT 1 FROM sessions WHERE id = $1::uuid', [session.id]);
    sameRefusal(t, await io.both(alice, rev, 'get_session', { session_id: session.id }), 404, 'not_found');
    for (const [table, column, id] of [
      ['session_events', 'session_id', session.id],
      ['executions', 'id', executionId],
    ]) {
      const { rows } = await db.query(`SELECT 1 FROM ${table} WHERE ${column} = $1::uuid`, [id]);
      t.equal(rows.length, 0, `${table} removed with the session`);
    }
  },
);

t.test('delete_session over JSON-RPC; the alias is free again at once', async (t) => {
  const session = await newSession(rev, 'reused-alias');
  const rpc = await io.rpc(alice, rev, 'delete_session', { session_id: session.id });
  t.same(rpc.result, { session: { ...session, status: 'deleting' } });
  // Whether or not the background removal has run yet, the alias is available.
  const again = await newSession(rev, 'reused-alias');
  t.not(again.id, session.id);
  t.equal(again.status, 'active');
  await waitUntilNone(db, 'SELECT 1 FROM sessions WHERE id = $1::uuid', [session.id]);
});

t.test('the reaper finishes sessions a crash left in deleting', async (t) => {
  const { revisionId } = await freshRevision();
  const left = [await newSession(revisionId), await newSession(revisionId)];
  const kept = await newSession(revisionId);
  await insertExecution(db, left[0]!.id, org.id);
  await db.query(`UPDATE sessions SET status = 'deleting' WHERE id = ANY($1::uuid[])`, [left.map((s) => s.id)]);
  t.equal(await reapDeletingSessions(db), 2);
  const { rows } = await db.query<{ id: string }>('SELECT id FROM sessions WHERE revision_id = $1::uuid', [revisionId]);
  t.same(
    rows.map((r) => r.id),
    [kept.id],
  );
  t.equal(await reapDeletingSessions(db), 0, 'nothing left to reap');

  // The interval form runs a pass at once; stop() waits for it.
  const another = await newSession(revisionId);
  await db.query(`UPDATE sessions SET status = 'deleting' WHERE id = $1::uuid`, [another.id]);
  const errors: unknown[] = [];
  const reaper = startSessionReaper(db, { intervalMs: 60_000, onError: (e) => errors.push(e) });
  await reaper.stop();
  t.same(errors, []);
  t.same((await db.query('SELECT 1 FROM sessions WHERE id = $1::uuid', [another.id])).rows, []);
});

t.test('the reaper skips a session another removal holds, and takes it later', async (t) => {
  const { revisionId } = await freshRevision();
  const session = await newSession(revisionId);
  await db.query(`UPDATE sessions SET status = 'deleting' WHERE id = $1::uuid`, [session.id]);
  const release = await holdSessionRow(t, databaseUrl, session.id);
  // FOR KEY SHARE does not stop the SKIP LOCKED probe (FOR UPDATE) from seeing it locked.
  t.equal(await reapDeletingSessions(db), 0);
  await release();
  t.equal(await reapDeletingSessions(db), 1);
});

t.test('list_sessions: the record cursor through 25 sessions on both transports', async (t) => {
  const { revisionId } = await freshRevision();
  const created: string[] = [];
  for (let i = 0; i < 25; i += 1) created.push((await newSession(revisionId, `page-${String(i).padStart(2, '0')}`)).id);
  const newestFirst = [...created].reverse();

  for (const transport of ['rest', 'rpc'] as const) {
    const seen: string[] = [];
    const lasts: Array<string | null> = [];
    let start: string | undefined;
    for (let page = 0; page < 5; page += 1) {
      const params = start === undefined ? {} : { start_session_id: start };
      const body =
        transport === 'rest'
          ? (await io.rest(alice, revisionId, 'list_sessions', params)).body
          : (await io.rpc(alice, revisionId, 'list_sessions', params)).result;
      t.same(
        Object.keys(body).filter((k) => k !== 'status'),
        ['sessions', 'last_session_id'],
        transport,
      );
      seen.push(...body.sessions.map((s: any) => s.id));
      lasts.push(body.last_session_id);
      if (body.last_session_id === null) break;
      start = body.last_session_id;
    }
    t.same(seen, newestFirst, `${transport}: every session once, newest first`);
    t.same(lasts, [newestFirst[9], newestFirst[19], null], `${transport}: pages of 10, 10, 5`);
  }
  const first = await io.rest(alice, revisionId, 'list_sessions', {});
  t.match(first.body.sessions[0], {
    id: newestFirst[0],
    alias: 'page-24',
    revision_id: revisionId,
    status: 'active',
    created_at: ISO,
  });
});

t.test('list_sessions: exactly ten is one exhausted page; none is an empty one', async (t) => {
  const { revisionId } = await freshRevision();
  const empty = await io.both(alice, revisionId, 'list_sessions', {});
  t.same(empty.rest.body, { status: 'success', sessions: [], last_session_id: null });
  t.same(empty.rpc.result, { sessions: [], last_session_id: null });
  for (let i = 0; i < 10; i += 1) await newSession(revisionId);
  const page = await io.rest(alice, revisionId, 'list_sessions', {});
  t.equal(page.body.sessions.length, 10);
  t.equal(page.body.last_session_id, null);
});

t.test('list_sessions: sessions created at the same instant page by id without repeats', async (t) => {
  const { revisionId } = await freshRevision();
  await db.query(`INSERT INTO sessions (revision_id) SELECT $1::uuid FROM generate_series(1, 23)`, [revisionId]);
  const seen: string[] = [];
  let start: string | undefined;
  for (let page = 0; page < 5; page += 1) {
    const body = (
      await io.rest(alice, revisionId, 'list_sessions', start === undefined ? {} : { start_session_id: start })
    ).body;
    seen.push(...body.sessions.map((s: any) => s.id));
    if (body.last_session_id === null) break;
    start = body.last_session_id;
  }
  t.equal(seen.length, 23);
  t.equal(new Set(seen).size, 23);
  t.same(seen, [...seen].sort().reverse(), 'ties break on id, descending');
});

t.test('list_sessions refuses limit, null and malformed cursors (400)', async (t) => {
  const { revisionId } = await freshRevision();
  for (const params of [
    { limit: 10 },
    { limit: 5 },
    { start_session_id: null },
    { start_session_id: 'page-01' },
    { cursor: 'x' },
  ]) {
    const outcome = await io.both(alice, revisionId, 'list_sessions', params);
    sameRefusal(t, outcome, 400, 'invalid_request_body');
    if ('limit' in params) t.match(outcome.rest.body.message, /limit is not accepted/);
  }
});

t.test(
  'list_sessions: resuming from a deleted record, or one of another listing, is 500 cursor_record_deleted',
  async (t) => {
    const { revisionId } = await freshRevision();
    for (let i = 0; i < 12; i += 1) await newSession(revisionId);
    const first = await io.rest(alice, revisionId, 'list_sessions', {});
    const cursor = first.body.last_session_id as string;
    t.ok(cursor);

    const elsewhere = await newSession(publicFlow.revision.id);
    sameRefusal(
      t,
      await io.both(alice, revisionId, 'list_sessions', { start_session_id: elsewhere.id }),
      500,
      'cursor_record_deleted',
    );
    sameRefusal(
      t,
      await io.both(alice, revisionId, 'list_sessions', { start_session_id: '0b9a5b8e-0000-4000-8000-000000000000' }),
      500,
      'cursor_record_deleted',
    );

    t.equal((await io.rest(alice, revisionId, 'delete_session', { session_id: cursor })).status, 200);
    // While its rows remain, the deleting session is still in the listing and still a cursor.
    await waitUntilNone(db, 'SELECT 1 FROM sessions WHERE id = $1::uuid', [cursor]);
    sameRefusal(
      t,
      await io.both(alice, revisionId, 'list_sessions', { start_session_id: cursor }),
      500,
      'cursor_record_deleted',
    );
  },
);
