import t from 'tap';
import { LISTENER_APPLICATION_NAME, MAX_SUBSCRIPTIONS_PER_CONNECTION } from '../control-plane/events/listener.ts';
import { appendExecutionEvent, appendSessionEvent } from '../shared/events/store.ts';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import { untilLockWaits } from './helpers/lock-waits.ts';
import { openSocket, sameRefusal, transports, type Socket } from './helpers/session-commands.ts';
import { insertExecution } from './helpers/session-fixtures.ts';

const { app, db } = await buildTestApp(t);
const io = transports(t, app);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const org = await createOrg(app, alice);
const rev = (await createBlob(app, alice, org.id)).revision.id as string;
const otherRev = (await createBlob(app, alice, org.id)).revision.id as string;

async function newSession(revisionId = rev): Promise<Record<string, any>> {
  const res = await io.rest(alice, revisionId, 'create_session', {});
  if (res.status !== 200) throw new Error(`create_session: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.session;
}

async function subscribeTo(socket: Socket, params: Record<string, unknown>, revisionId = rev): Promise<string> {
  const frame = await socket.call('subscribe', { revision_id: revisionId, ...params });
  if (typeof frame.result?.subscription !== 'string') throw new Error(`subscribe: ${JSON.stringify(frame)}`);
  return frame.result.subscription;
}

t.test('subscribe to a session: events after subscribing arrive in order as notifications', async (t) => {
  const session = await newSession();
  const socket = await openSocket(t, app, alice);
  const frame = await socket.call('subscribe', { revision_id: rev, session_id: session.id });
  t.same(Object.keys(frame.result), ['subscription']);
  const subscription = frame.result.subscription;

  const written = [];
  for (let i = 0; i < 5; i += 1)
    written.push(await appendSessionEvent(db, { sessionId: session.id, kind: 'test.pushed', attributes: { i } }));
  for (const event of written) {
    t.same(await socket.notification(), { jsonrpc: '2.0', method: 'event', params: { subscription, event } });
  }
  // session.created happened before the subscription and was not pushed.
  t.equal(socket.pendingNotifications(), 0);
});

t.test('events written by commands reach subscribers, including session.deleting', async (t) => {
  const session = await newSession();
  const socket = await openSocket(t, app, alice);
  const subscription = await subscribeTo(socket, { session_id: session.id });
  t.equal((await io.rest(alice, rev, 'delete_session', { session_id: session.id })).status, 200);
  const pushed = await socket.notification();
  t.equal(pushed.params.subscription, subscription);
  t.match(pushed.params.event, { kind: 'session.deleting', session_id: session.id });
});

t.test('subscribe by alias; two sockets on one session both receive; unsubscribe stops the pushes', async (t) => {
  const res = await io.rest(alice, rev, 'create_session', { alias: 'watched' });
  const session = res.body.session;
  const other = await newSession();
  const one = await openSocket(t, app, alice);
  const two = await openSocket(t, app, alice);
  const subOne = await subscribeTo(one, { session_id: 'watched' });
  const subTwo = await subscribeTo(two, { session_id: session.id });
  const subOther = await subscribeTo(one, { session_id: other.id });
  t.not(subOne, subTwo);

  const first = await appendSessionEvent(db, { sessionId: session.id, kind: 'test.first' });
  t.same((await one.notification()).params, { subscription: subOne, event: first });
  t.same((await two.notification()).params, { subscription: subTwo, event: first });

  const answer = await one.call('unsubscribe', { revision_id: rev, subscription: subOne });
  t.same(answer, { jsonrpc: '2.0', id: answer.id, result: { subscription: subOne } });
  const second = await appendSessionEvent(db, { sessionId: session.id, kind: 'test.second' });
  const marker = await appendSessionEvent(db, { sessionId: other.id, kind: 'test.marker' });
  // Socket one's next push is the other session's: nothing of the unsubscribed one came before it.
  t.same((await one.notification()).params, { subscription: subOther, event: marker });
  t.same((await two.notification()).params, { subscription: subTwo, event: second });

  const again = await one.call('unsubscribe', { revision_id: rev, subscription: subOne });
  t.match(again.error, { code: -32001, data: { error: 'not_found', http_status: 404 } });
  // Another socket's subscription is not this socket's to end.
  const foreign = await one.call('unsubscribe', { revision_id: rev, subscription: subTwo });
  t.match(foreign.error, { code: -32001, data: { error: 'not_found', http_status: 404 } });
  // Nor is it ended through another revision.
  const wrongRevision = await two.call('unsubscribe', { revision_id: otherRev, subscription: subTwo });
  t.match(wrongRevision.error, { code: -32001, data: { error: 'not_found', http_status: 404 } });
});

t.test("subscribe to an execution: its events, not the session's", async (t) => {
  const session = await newSession();
  const executionId = await insertExecution(db, session.id, org.id);
  const socket = await openSocket(t, app, alice);
  const subscription = await subscribeTo(socket, { execution_id: executionId });
  await appendSessionEvent(db, { sessionId: session.id, kind: 'test.session_only' });
  const started = await appendExecutionEvent(db, { executionId, sessionId: session.id, kind: 'execution.started' });
  const node = await appendExecutionEvent(db, {
    executionId,
    sessionId: session.id,
    kind: 'node.started',
    node: 'greet',
  });
  t.same((await socket.notification()).params, { subscription, event: started });
  t.same((await socket.notification()).params, { subscription, event: node });
});

t.test('refusals: unreadable session or execution (404 shape), other revision, bad params, REST', async (t) => {
  const session = await newSession();
  const executionId = await insertExecution(db, session.id, org.id);
  const bobs = await openSocket(t, app, bob);
  for (const params of [{ session_id: session.id }, { execution_id: executionId }]) {
    const refused = await bobs.call('subscribe', { revision_id: rev, ...params });
    t.same(refused.error, {
      code: -32001,
      message: 'No such revision.',
      data: { error: 'not_found', message: 'No such revision.', http_status: 404 },
    });
  }
  const socket = await openSocket(t, app, alice);
  for (const params of [
    { session_id: session.id },
    { execution_id: executionId },
    { session_id: 'nope-session' },
    { execution_id: 'nope' },
  ]) {
    const refused = await socket.call('subscribe', { revision_id: otherRev, ...params });
    t.match(refused.error, { code: -32001, data: { error: 'not_found', http_status: 404 } }, JSON.stringify(params));
  }
  for (const params of [
    {},
    { session_id: session.id, execution_id: executionId },
    { session_id: session.id, extra: 1 },
    { session_id: null },
  ]) {
    const refused = await socket.call('subscribe', { revision_id: rev, ...params });
    t.match(
      refused.error,
      { code: -32602, data: { error: 'invalid_request_body', http_status: 400 } },
      JSON.stringify(params),
    );
  }
  // Over REST there is no socket to push to.
  for (const [command, params] of [
    ['subscribe', { session_id: session.id }],
    ['unsubscribe', { subscription: 'x' }],
  ] as const) {
    const rest = await io.rest(alice, rev, command, params);
    t.equal(rest.status, 400);
    t.equal(rest.body.error, 'invalid_request_body');
    t.match(rest.body.message, /needs a WebSocket/);
  }
  // Over REST an unreadable revision is still 404 first, as for every command.
  sameRefusal(t, await io.both(bob, rev, 'subscribe', { session_id: session.id }), 404, 'not_found');
});

t.test(`a socket holds at most ${MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions; closing it ends them`, async (t) => {
  const session = await newSession();
  const socket = await openSocket(t, app, alice);
  const ids = new Set<string>();
  for (let i = 0; i < MAX_SUBSCRIPTIONS_PER_CONNECTION; i += 1)
    ids.add(await subscribeTo(socket, { session_id: session.id }));
  t.equal(ids.size, MAX_SUBSCRIPTIONS_PER_CONNECTION);
  const over = await socket.call('subscribe', { revision_id: rev, session_id: session.id });
  t.match(over.error, { code: -32001, data: { error: 'conflict', http_status: 409 } });
  // Unsubscribing makes room again.
  const [oneId] = ids;
  t.ok((await socket.call('unsubscribe', { revision_id: rev, subscription: oneId })).result);
  ids.delete(oneId!);
  ids.add(await subscribeTo(socket, { session_id: session.id }));

  // Another socket has its own allowance.
  const other = await openSocket(t, app, alice);
  const otherSub = await subscribeTo(other, { session_id: session.id });

  const before = app.ctx.events.stats();
  socket.client.socket.close();
  await socket.client.closed;
  const event = await appendSessionEvent(db, { sessionId: session.id, kind: 'test.after_close' });
  t.same((await other.notification()).params, { subscription: otherSub, event });
  // The server sees the close on its own schedule; once it has, the socket's subscriptions are gone.
  const expected = {
    subscriptions: before.subscriptions - MAX_SUBSCRIPTIONS_PER_CONNECTION,
    connections: before.connections - 1,
  };
  for (let i = 0; i < 500 && app.ctx.events.stats().connections !== expected.connections; i += 1)
    await new Promise((resolve) => setTimeout(resolve, 10));
  t.match(app.ctx.events.stats(), expected);
});

t.test('a lost LISTEN connection reconnects and delivers what was written meanwhile', async (t) => {
  const session = await newSession();
  const socket = await openSocket(t, app, alice);
  const subscription = await subscribeTo(socket, { session_id: session.id });
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
    [LISTENER_APPLICATION_NAME],
  );
  t.equal(rows[0]!.n, 1, 'one LISTEN connection for the process');
  const missed = await appendSessionEvent(db, { sessionId: session.id, kind: 'test.while_down' });
  t.same((await socket.notification()).params, { subscription, event: missed });
  const later = await appendSessionEvent(db, { sessionId: session.id, kind: 'test.after_reconnect' });
  t.same((await socket.notification()).params, { subscription, event: later });
});

t.test("a read that cannot finish does not hold back another owner's pushes", async (t) => {
  const session = await newSession();
  const executionId = await insertExecution(db, session.id, org.id);
  const watcher = await openSocket(t, app, alice);
  await subscribeTo(watcher, { session_id: session.id });
  const follower = await openSocket(t, app, alice);
  const subscription = await subscribeTo(follower, { execution_id: executionId });
  // Nothing can read the session's events until the lock goes: an announcement of the session
  // sends the listener into a read that waits for it.
  const holder = await db.pool.connect();
  t.teardown(() => holder.release());
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE session_events IN ACCESS EXCLUSIVE MODE');
  await db.query(`SELECT pg_notify('ws_events', $1)`, [`session:${session.id}:${Number.MAX_SAFE_INTEGER}`]);
  await untilLockWaits(db, 1);
  // The execution's event is announced by id alone, so it is read too: beside the stuck read.
  const event = await appendExecutionEvent(db, { executionId, sessionId: session.id, kind: 'test.beside' });
  t.same((await follower.notification()).params, { subscription, event }, 'pushed while the other read waits');
  await holder.query('ROLLBACK');
});
