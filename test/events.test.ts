import t from 'tap';
import { appendExecutionEvent, appendSessionEvent } from '../shared/events/store.ts';
import { buildTestApp, signInAnonymous, type Caller } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import { sameRefusal, transports } from './helpers/session-commands.ts';
import { holdSessionRow, insertExecution } from './helpers/session-fixtures.ts';

const { app, db, databaseUrl } = await buildTestApp(t);
const io = transports(t, app);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const org = await createOrg(app, alice);
const rev = (await createBlob(app, alice, org.id)).revision.id as string;
const otherRev = (await createBlob(app, alice, org.id)).revision.id as string;

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function newSession(revisionId: string, alias?: string): Promise<Record<string, any>> {
  const res = await io.rest(alice, revisionId, 'create_session', alias === undefined ? {} : { alias });
  if (res.status !== 200) throw new Error(`create_session: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session;
}

/** Appends `n` session events, one transaction each, and returns their ids. */
async function appendMany(sessionId: string, n: number, kind = 'test.filler'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 1) ids.push((await appendSessionEvent(db, { sessionId, kind, attributes: { i } })).id);
  return ids;
}

type Page = { events: any[]; cursor: string | null };

async function page(
  as: Caller,
  command: string,
  params: Record<string, unknown>,
  over: 'rest' | 'rpc' = 'rest',
): Promise<Page> {
  if (over === 'rest') {
    const res = await io.rest(as, rev, command, params);
    if (res.status !== 200) throw new Error(`${command}: ${res.status} ${JSON.stringify(res.body)}`);
    const { status: _status, ...body } = res.body;
    return body;
  }
  const frame = await io.rpc(as, rev, command, params);
  if (!frame.result) throw new Error(`${command}: ${JSON.stringify(frame)}`);
  return frame.result;
}

t.test(
  'list_session_events on both transports: create and delete are recorded, records have the contract fields',
  async (t) => {
    const session = await newSession(rev, 'evented');
    const both = await io.both(alice, rev, 'list_session_events', { session_id: 'evented' });
    t.equal(both.rest.status, 200);
    const { status: _status, ...restBody } = both.rest.body;
    t.same(restBody, both.rpc.result, 'same answer on both transports');
    t.same(Object.keys(restBody), ['events', 'cursor']);
    t.equal(restBody.cursor, null);
    t.equal(restBody.events.length, 1);
    const created = restBody.events[0];
    t.same(Object.keys(created).sort(), ['at', 'attributes', 'execution_id', 'id', 'kind', 'node', 'session_id']);
    t.match(created, {
      id: /^\d+$/,
      kind: 'session.created',
      at: ISO,
      session_id: session.id,
      execution_id: null,
      node: null,
      attributes: { alias: 'evented' },
    });

    // Held, so the deleting session is still there to list.
    const release = await holdSessionRow(t, databaseUrl, session.id);
    t.equal((await io.rest(alice, rev, 'delete_session', { session_id: session.id })).status, 200);
    const after = await page(alice, 'list_session_events', { session_id: session.id }, 'rpc');
    t.same(
      after.events.map((e) => e.kind),
      ['session.created', 'session.deleting'],
    );
    await release();
  },
);

t.test('pagination to exhaustion: default 50, pages of the limit asked for, null cursor only at the end', async (t) => {
  const session = await newSession(rev);
  const ids = [
    (await page(alice, 'list_session_events', { session_id: session.id })).events[0].id,
    ...(await appendMany(session.id, 120)),
  ];
  const first = await page(alice, 'list_session_events', { session_id: session.id });
  t.equal(first.events.length, 50, 'default limit 50');
  t.type(first.cursor, 'string');

  for (const over of ['rest', 'rpc'] as const) {
    const seen: string[] = [];
    let cursor: string | undefined;
    const sizes: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      const p = await page(
        alice,
        'list_session_events',
        { session_id: session.id, limit: 40, ...(cursor ? { cursor } : {}) },
        over,
      );
      sizes.push(p.events.length);
      seen.push(...p.events.map((e) => e.id));
      if (p.cursor === null) break;
      cursor = p.cursor;
    }
    t.same(sizes, [40, 40, 40, 1], `${over}: 121 events in pages of 40; the page that ends the listing says so`);
    t.same(seen, ids, `${over}: every event once, in id order`);
  }
});

t.test(
  'limit bounds: 1 and 200 accepted; 0, 201, fractions and strings that are not integers refused with invalid_limit',
  async (t) => {
    const session = await newSession(rev);
    await appendMany(session.id, 3);
    const one = await page(alice, 'list_session_events', { session_id: session.id, limit: 1 });
    t.equal(one.events.length, 1);
    t.type(one.cursor, 'string');
    const max = await page(alice, 'list_session_events', { session_id: session.id, limit: 200 });
    t.equal(max.events.length, 4);
    t.equal(max.cursor, null);
    for (const limit of [0, 201, -1, 1.5, 'x', null, true]) {
      sameRefusal(
        t,
        await io.both(alice, rev, 'list_session_events', { session_id: session.id, limit }),
        400,
        'invalid_limit',
      );
    }
    sameRefusal(
      t,
      await io.both(alice, rev, 'list_session_events', { session_id: session.id, cursor: null }),
      400,
      'invalid_request_body',
    );
    sameRefusal(
      t,
      await io.both(alice, rev, 'list_session_events', { session_id: session.id, cursor: 5 }),
      400,
      'invalid_request_body',
    );
  },
);

t.test('cursor tampering and transplants are invalid_cursor', async (t) => {
  const a = await newSession(rev, 'cursor-a');
  const b = await newSession(rev);
  await appendMany(a.id, 5);
  await appendMany(b.id, 5);
  const fromA = (await page(alice, 'list_session_events', { session_id: a.id, limit: 2 })).cursor!;
  t.ok(fromA);
  const [payload, mac] = fromA.split('.') as [string, string];
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  const forged = Buffer.from(JSON.stringify(1)).toString('base64url');
  const tampered = [
    `${flip(payload, 0)}.${mac}`,
    `${payload}.${flip(mac, mac.length - 2)}`,
    `${forged}.${mac}`,
    `${payload}.${mac}x`,
    `${payload}`,
    '',
    'not a cursor',
    `${payload}.${mac}.${mac}`,
  ];
  for (const cursor of tampered) {
    sameRefusal(
      t,
      await io.both(alice, rev, 'list_session_events', { session_id: a.id, cursor }),
      400,
      'invalid_cursor',
    );
  }
  // A cursor of session A is not one of session B's listing, nor of an execution's.
  sameRefusal(
    t,
    await io.both(alice, rev, 'list_session_events', { session_id: b.id, cursor: fromA }),
    400,
    'invalid_cursor',
  );
  const executionId = await insertExecution(db, a.id, org.id);
  sameRefusal(
    t,
    await io.both(alice, rev, 'list_execution_events', { execution_id: executionId, cursor: fromA }),
    400,
    'invalid_cursor',
  );
  // The untouched cursor still works, by id or by alias of the same session.
  const resumed = await page(alice, 'list_session_events', { session_id: 'cursor-a', limit: 2, cursor: fromA }, 'rpc');
  t.same(
    resumed.events.map((e) => e.attributes.i),
    [1, 2],
  );
});

t.test('pagination with concurrent inserts: no duplicates, nothing that existed at the start skipped', async (t) => {
  const session = await newSession(rev);
  await appendMany(session.id, 60);
  const atStart = (
    await db.query<{ id: number }>('SELECT id FROM session_events WHERE session_id = $1::uuid ORDER BY id', [
      session.id,
    ])
  ).rows.map((r) => String(r.id));
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i += 1) {
    const p = await page(
      alice,
      'list_session_events',
      { session_id: session.id, limit: 7, ...(cursor ? { cursor } : {}) },
      i % 2 === 0 ? 'rest' : 'rpc',
    );
    seen.push(...p.events.map((e) => e.id));
    // Writers keep going while the reader pages, for the first few pages.
    if (i < 5)
      await Promise.all([appendMany(session.id, 3, 'test.concurrent'), appendMany(session.id, 2, 'test.concurrent')]);
    if (p.cursor === null) break;
    cursor = p.cursor;
  }
  t.equal(new Set(seen).size, seen.length, 'no event twice');
  t.same(
    atStart.filter((id) => !seen.includes(id)),
    [],
    'every event present at the start was listed',
  );
  t.same(
    seen,
    [...seen].sort((x, y) => Number(x) - Number(y)),
    'in id order',
  );
  t.equal(seen.length, atStart.length + 25, 'events committed ahead of the reader are listed too');
});

t.test('list_execution_events: an execution of a session of this revision, on both transports', async (t) => {
  const session = await newSession(rev);
  const executionId = await insertExecution(db, session.id, org.id);
  const written = [];
  for (const [kind, node] of [
    ['execution.started', null],
    ['node.started', 'greet'],
    ['node.finished', 'greet'],
    ['execution.finished', null],
  ] as const) {
    written.push(
      await appendExecutionEvent(db, { executionId, sessionId: session.id, kind, node, attributes: { ok: true } }),
    );
  }
  const both = await io.both(alice, rev, 'list_execution_events', { execution_id: executionId, limit: 3 });
  t.equal(both.rest.status, 200);
  t.same(both.rest.body.events, both.rpc.result.events);
  t.same(both.rest.body.events, written.slice(0, 3));
  t.match(both.rest.body.events[1], {
    kind: 'node.started',
    node: 'greet',
    execution_id: executionId,
    session_id: session.id,
    attributes: { ok: true },
  });
  const rest = await page(alice, 'list_execution_events', {
    execution_id: executionId,
    limit: 3,
    cursor: both.rest.body.cursor,
  });
  t.same(rest, { events: written.slice(3), cursor: null });
  // Execution events are not session events.
  const sessionKinds = (await page(alice, 'list_session_events', { session_id: session.id })).events.map((e) => e.kind);
  t.same(sessionKinds, ['session.created']);
  // A REST cursor resumes over JSON-RPC: the cursor is bound to the listing, not the transport.
  const viaRpc = await page(
    alice,
    'list_execution_events',
    { execution_id: executionId, limit: 3, cursor: both.rpc.result.cursor },
    'rpc',
  );
  t.same(viaRpc.events, written.slice(3));
});

t.test('not found: sessions and executions of other revisions, unknown ones, unreadable revisions', async (t) => {
  const elsewhere = await newSession(otherRev);
  const foreignExecution = await insertExecution(db, elsewhere.id, org.id);
  for (const sessionId of [elsewhere.id, 'no-such-session', '0b9a5b8e-0000-4000-8000-000000000000']) {
    sameRefusal(t, await io.both(alice, rev, 'list_session_events', { session_id: sessionId }), 404, 'not_found');
  }
  for (const executionId of [foreignExecution, 'not-an-id', '0b9a5b8e-0000-4000-8000-000000000000']) {
    sameRefusal(t, await io.both(alice, rev, 'list_execution_events', { execution_id: executionId }), 404, 'not_found');
  }
  const mine = await newSession(rev);
  const mineExecution = await insertExecution(db, mine.id, org.id);
  sameRefusal(t, await io.both(bob, rev, 'list_session_events', { session_id: mine.id }), 404, 'not_found');
  sameRefusal(t, await io.both(bob, rev, 'list_execution_events', { execution_id: mineExecution }), 404, 'not_found');
  sameRefusal(
    t,
    await io.both(alice, rev, 'list_execution_events', { execution_id: mineExecution, nope: 1 }),
    400,
    'invalid_request_body',
  );
  sameRefusal(t, await io.both(alice, rev, 'list_execution_events', {}), 400, 'invalid_request_body');
});
