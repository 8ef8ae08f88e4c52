import t from 'tap';
import { runRetentionSweep } from '../shared/retention/sweep.ts';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from './helpers/app.ts';
import { actAs, apiKey, mintKey } from './helpers/accounts.ts';
import { lockWaits as lockWaitsOf } from './helpers/lock-waits.ts';
import { createBlob, createOrg, uniqueAlias } from './helpers/resources.ts';
import { openSocket } from './helpers/session-commands.ts';
import { connect, wsUrl } from './helpers/ws-client.ts';

const ORIGIN = 'https://app.example.test';
const { app, db } = await buildTestApp(t, { CORS_ORIGINS: ORIGIN });
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);

const GRAPH = { start: 'nap', nodes: { nap: { processor: 'logic.sleep', config: { seconds: 1 } } } };
let keys = 0;
/** A key no other test of this file sends. */
const freshKey = () => `key-${process.pid}-${++keys}-${Math.random().toString(36).slice(2)}`;

function keyed(caller: Pick<Caller, 'headers'>, key: string): Record<string, string> {
  return { ...caller.headers, 'idempotency-key': key };
}

async function count(sql: string, params: unknown[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params);
  return rows[0]!.n;
}

interface Flow {
  rev: string;
  sessionId: string;
  definitionId: string;
}

/** A workflow revision of Alice's with a session and a definition. */
async function freshFlow(): Promise<Flow> {
  const org = await createOrg(app, alice);
  const { revision } = await createBlob(app, alice, org.id);
  const session = await call(app, 'POST', `/v1/revisions/${revision.id}/create_session`, { as: alice, body: {} });
  const definition = await call(app, 'POST', `/v1/revisions/${revision.id}/create_definition`, {
    as: alice,
    body: { category: 'workflow', graph: GRAPH },
  });
  if (session.status !== 200 || definition.status !== 200) throw new Error('flow setup failed');
  return { rev: revision.id, sessionId: session.body.session.id, definitionId: definition.body.definition.id };
}

const flow = await freshFlow();

/** A duplicate answered while the first request with its key was still running. */
function inProgress(answer: { status: number; body: any }): boolean {
  return answer.status === 409 && answer.body.error === 'conflict' && /in progress/.test(answer.body.message);
}
const executionsOf = (sessionId: string) => count('executions WHERE session_id = $1::uuid', [sessionId]);
const sessionsOf = (rev: string) => count('sessions WHERE revision_id = $1::uuid', [rev]);

t.test('REST: the same key and body answers the first response byte for byte and creates nothing', async (t) => {
  const key = freshKey();
  const alias = uniqueAlias('org');
  const first = await call(app, 'POST', '/v1/orgs', { headers: keyed(alice, key), body: { alias, name: 'Acme' } });
  t.equal(first.status, 201);
  t.equal(first.res.headers['idempotent-replayed'], undefined, 'the first answer is not a replay');
  // The same body with its fields in another order and other spacing is the same request.
  const retry = await app.inject({
    method: 'POST',
    url: '/v1/orgs',
    headers: { ...keyed(alice, key), 'content-type': 'application/json' },
    payload: `{ "name" : "Acme", "alias": ${JSON.stringify(alias)} }`,
  });
  t.equal(retry.statusCode, 201);
  t.equal(retry.payload, first.res.payload, 'byte for byte');
  t.equal(retry.headers['idempotent-replayed'], 'true');
  t.equal(await count('orgs WHERE alias = $1', [alias]), 1, 'one organization');
  // A browser may read the header.
  const fromBrowser = await call(app, 'POST', '/v1/orgs', {
    headers: { ...keyed(alice, key), origin: ORIGIN },
    body: { alias, name: 'Acme' },
  });
  t.match(String(fromBrowser.res.headers['access-control-expose-headers']), /idempotent-replayed/);
  // A field left out is not the same as the field at its default: another request.
  const withDefault = await call(app, 'POST', '/v1/orgs', {
    headers: keyed(alice, key),
    body: { alias, name: 'Acme', visibility: 'private' },
  });
  t.equal(withDefault.status, 409);
  t.equal(withDefault.body.error, 'conflict');
  // Without the key the retry is a new request: its alias is taken.
  const unkeyed = await call(app, 'POST', '/v1/orgs', { as: alice, body: { alias, name: 'Acme' } });
  t.equal(unkeyed.status, 409);
  t.equal(unkeyed.body.error, 'alias_taken');
});

t.test('REST: the same key with another body, or on another route, is 409 conflict', async (t) => {
  const key = freshKey();
  const first = await call(app, 'POST', '/v1/orgs', {
    headers: keyed(alice, key),
    body: { alias: uniqueAlias('org') },
  });
  t.equal(first.status, 201);
  const other = await call(app, 'POST', '/v1/orgs', {
    headers: keyed(alice, key),
    body: { alias: uniqueAlias('org') },
  });
  t.equal(other.status, 409);
  t.same(Object.keys(other.body).sort(), ['error', 'message', 'status']);
  t.match(other.body, { status: 'failure', error: 'conflict', message: /already used/ });
  const elsewhere = await call(app, 'POST', `/v1/blobs/${first.body.org.id}`, {
    headers: keyed(alice, key),
    body: { type: 'svc.compute.workflow', alias: uniqueAlias('blob') },
  });
  t.equal(elsewhere.status, 409);
  t.equal(elsewhere.body.error, 'conflict');
  t.equal(await count('blobs WHERE org_id = $1::uuid', [first.body.org.id]), 0, 'nothing created');
});

t.test('every creating REST route takes a key', async (t) => {
  const org = await createOrg(app, alice);
  const routes: Array<{ url: string; body: Record<string, unknown>; table: string }> = [
    { url: `/v1/blobs/${org.id}`, body: { type: 'svc.compute.workflow', alias: uniqueAlias('blob') }, table: 'blobs' },
    { url: '/v1/users', body: { name: 'bot' }, table: 'users' },
    { url: '/v1/api-keys', body: { target: 'organization', target_id: org.id, role: 'read' }, table: 'api_keys' },
    {
      url: '/v1/credentials',
      body: { target: 'organization', target_id: org.id, name: 'token', secret: 's3cret-value' },
      table: 'credentials',
    },
  ];
  for (const route of routes) {
    const key = freshKey();
    const before = await count(route.table, []);
    const first = await call(app, 'POST', route.url, { headers: keyed(alice, key), body: route.body });
    t.equal(first.status, 201, route.url);
    const retry = await call(app, 'POST', route.url, { headers: keyed(alice, key), body: route.body });
    t.equal(retry.status, 201, `${route.url} retried`);
    t.equal(retry.res.payload, first.res.payload, `${route.url}: the first answer`);
    t.equal(await count(route.table, []), before + 1, `${route.url}: one row`);
  }
  const blob = (await call(app, 'GET', `/v1/orgs/${org.id}/blobs`, { as: alice })).body.blobs[0];
  const key = freshKey();
  const revision = await call(app, 'POST', `/v1/blobs/${org.id}/${blob.id}/revisions`, {
    headers: keyed(alice, key),
    body: {},
  });
  const again = await call(app, 'POST', `/v1/blobs/${org.id}/${blob.id}/revisions`, {
    headers: keyed(alice, key),
    body: {},
  });
  t.equal(revision.status, 201);
  t.equal(again.res.payload, revision.res.payload);
  t.equal(await count('revisions WHERE blob_id = $1::uuid', [blob.id]), 2, 'revision 1 and one more');
});

t.test('a minted key comes back to a retry, and is not stored in the clear', async (t) => {
  const org = await createOrg(app, alice);
  const key = freshKey();
  const body = { target: 'organization', target_id: org.id, role: 'read' };
  const first = await call(app, 'POST', '/v1/api-keys', { headers: keyed(alice, key), body });
  const retry = await call(app, 'POST', '/v1/api-keys', { headers: keyed(alice, key), body });
  t.equal(retry.body.api_key.key, first.body.api_key.key, 'the same secret');
  const { rows } = await db.query<{ response: Buffer }>('SELECT response FROM idempotency_keys WHERE key = $1', [key]);
  t.equal(rows.length, 1);
  t.notOk(rows[0]!.response.toString('latin1').includes(first.body.api_key.key), 'sealed');
  t.notOk(rows[0]!.response.toString('latin1').includes(org.id), 'sealed');
});

t.test('commands: the header over REST and the param over JSON-RPC are one key', async (t) => {
  const key = freshKey();
  const params = { session_id: flow.sessionId, definition_id: flow.definitionId, input_data: { n: 1 } };
  const before = await executionsOf(flow.sessionId);
  const rest = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_execution`, {
    headers: keyed(alice, key),
    body: params,
  });
  t.equal(rest.status, 200);
  const socket = await openSocket(t, app, alice);
  const rpc = await socket.call('create_execution', { revision_id: flow.rev, idempotency_key: key, ...params });
  t.same(rpc.result, { execution: rest.body.execution }, 'the first answer, over the other transport');
  const rpcAgain = await socket.call('create_execution', { revision_id: flow.rev, idempotency_key: key, ...params });
  t.same(rpcAgain.result, rpc.result);
  const restAgain = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_execution`, {
    headers: keyed(alice, key),
    body: params,
  });
  t.equal(restAgain.res.payload, rest.res.payload, 'byte for byte');
  t.equal(restAgain.res.headers['idempotent-replayed'], 'true');
  t.equal(await executionsOf(flow.sessionId), before + 1, 'one execution');

  const other = await socket.call('create_execution', {
    revision_id: flow.rev,
    idempotency_key: key,
    ...params,
    input_data: { n: 2 },
  });
  t.equal(other.error.code, -32001);
  t.match(other.error.data, { error: 'conflict', http_status: 409 });
  const otherRest = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_execution`, {
    headers: keyed(alice, key),
    body: { ...params, input_data: { n: 2 } },
  });
  t.equal(otherRest.status, 409);
  t.equal(otherRest.body.error, 'conflict');
  t.equal(await executionsOf(flow.sessionId), before + 1, 'still one');
});

t.test('a JSON Lines upload_records with a key appends once', async (t) => {
  const org = await createOrg(app, alice);
  const { revision } = await createBlob(app, alice, org.id, { type: 'svc.dataset.nlp' });
  const key = freshKey();
  const upload = () =>
    app.inject({
      method: 'POST',
      url: `/v1/revisions/${revision.id}/upload_records`,
      headers: { ...keyed(alice, key), 'content-type': 'application/x-ndjson' },
      payload: '{"text":"the cat sat"}\n{"text":"it rained"}\n',
    });
  const first = await upload();
  t.equal(first.statusCode, 200);
  t.same(first.json(), { status: 'success', uploaded: 2, total: 2 });
  const retry = await upload();
  t.equal(retry.payload, first.payload);
  t.equal(await count('nlp_records WHERE revision_id = $1::uuid', [revision.id]), 2, 'appended once');
});

t.test('WebSocket: idempotency_key is a param of creating commands only', async (t) => {
  const socket = await openSocket(t, app, alice);
  const key = freshKey();
  const first = await socket.call('create_session', { revision_id: flow.rev, idempotency_key: key });
  const retry = await socket.call('create_session', { revision_id: flow.rev, idempotency_key: key });
  t.ok(first.result.session.id);
  t.same(retry.result, first.result);
  t.equal(await count('sessions WHERE id = $1::uuid', [first.result.session.id]), 1);

  const read = await socket.call('get_session', {
    revision_id: flow.rev,
    session_id: flow.sessionId,
    idempotency_key: freshKey(),
  });
  t.equal(read.error.code, -32602, 'an unknown param of a command that creates nothing');
  t.equal(read.error.data.error, 'invalid_request_body');
  // Over REST the key is the header; in the body it is an unknown field.
  const inBody = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_session`, {
    as: alice,
    body: { idempotency_key: freshKey() },
  });
  t.equal(inBody.status, 400);
  t.equal(inBody.body.error, 'invalid_request_body');
  // The header on a command that creates nothing is ignored.
  const get = await call(app, 'POST', `/v1/revisions/${flow.rev}/get_session`, {
    headers: keyed(alice, ''),
    body: { session_id: flow.sessionId },
  });
  t.equal(get.status, 200);
});

t.test('malformed keys are 400 invalid_request_body on both transports', async (t) => {
  const bad = ['', 'x'.repeat(256), 'tab\there', 'caf\u00e9', 'two words'];
  const before = await count('orgs', []);
  for (const key of bad) {
    const res = await call(app, 'POST', '/v1/orgs', {
      headers: keyed(alice, key),
      body: { alias: uniqueAlias('org') },
    });
    t.equal(res.status, 400, JSON.stringify(key));
    t.match(res.body, { status: 'failure', error: 'invalid_request_body', message: /Idempotency-Key/ });
    const command = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_session`, {
      headers: keyed(alice, key),
      body: {},
    });
    t.equal(command.status, 400, `command, ${JSON.stringify(key)}`);
  }
  t.equal(await count('orgs', []), before, 'nothing created');
  t.equal(
    (
      await call(app, 'POST', '/v1/orgs', {
        headers: keyed(alice, 'x'.repeat(255)),
        body: { alias: uniqueAlias('org') },
      })
    ).status,
    201,
    '255 characters is a key',
  );
  const socket = await openSocket(t, app, alice);
  for (const key of ['', 'x'.repeat(256), 'a\u0001b', 'caf\u00e9', 42, null]) {
    const frame = await socket.call('create_session', { revision_id: flow.rev, idempotency_key: key });
    t.equal(frame.error?.code, -32602, JSON.stringify(key));
    t.equal(frame.error?.data.error, 'invalid_request_body');
  }
});

t.test("keys are the caller's: another user, or another credential of the same user, is independent", async (t) => {
  const key = freshKey();
  const theirs = await createOrg(app, bob);
  const a = await call(app, 'POST', '/v1/users', { headers: keyed(alice, key), body: { name: 'same' } });
  const b = await call(app, 'POST', '/v1/users', { headers: keyed(bob, key), body: { name: 'same' } });
  t.equal(a.status, 201);
  t.equal(b.status, 201);
  t.not(a.body.user.id, b.body.user.id, 'two accounts');
  t.equal(b.res.headers['idempotent-replayed'], undefined);
  // Another body under Bob's key is Bob's conflict, whatever Alice sent.
  const c = await call(app, 'POST', `/v1/blobs/${theirs.id}`, {
    headers: keyed(bob, key),
    body: { type: 'svc.compute.workflow', alias: uniqueAlias('blob') },
  });
  t.equal(c.body.error, 'conflict');

  const admin = await mintKey(app, alice.headers, 'user', alice.user.id, 'admin');
  const viaKey = await call(app, 'POST', '/v1/users', {
    headers: { ...apiKey(admin.key), 'idempotency-key': key },
    body: { name: 'same' },
  });
  t.equal(viaKey.status, 201);
  t.not(viaKey.body.user.id, a.body.user.id, 'an API key has keys of its own');
  // A refreshed token is the same caller: the retry finds the answer.
  const refreshed = await call(app, 'POST', '/v1/auth/refresh', { body: { refresh_token: alice.refreshToken } });
  const again = await call(app, 'POST', '/v1/users', {
    headers: { authorization: `Bearer ${refreshed.body.access_token}`, 'idempotency-key': key },
    body: { name: 'same' },
  });
  t.equal(again.res.payload, a.res.payload);
  // Acting as her service account, Alice is another caller.
  const acting = await actAs(app, alice.headers, a.body.user.id);
  const alias = uniqueAlias('org');
  const asService = await call(app, 'POST', '/v1/orgs', {
    headers: { ...acting, 'idempotency-key': key },
    body: { alias },
  });
  t.equal(asService.status, 201, 'not a conflict with her own POST /v1/users');
  t.equal(asService.body.org.owner_id, a.body.user.id);
});

t.test("a stored answer moved onto another caller's key does not open for them", async (t) => {
  // The sealed answer is bound to its caller and key (AAD): a row copied in the database, by a bug
  // or by hand, cannot hand Alice's answer (an account id, or a minted secret) to Bob.
  const key = freshKey();
  const a = await call(app, 'POST', '/v1/users', { headers: keyed(alice, key), body: { name: 'sealed' } });
  const b = await call(app, 'POST', '/v1/users', { headers: keyed(bob, key), body: { name: 'sealed' } });
  t.equal(a.status, 201);
  t.equal(b.status, 201);
  const moved = await db.query(
    `UPDATE idempotency_keys AS theirs SET iv = mine.iv, auth_tag = mine.auth_tag, response = mine.response
       FROM idempotency_keys AS mine
      WHERE mine.caller = $1 AND mine.key = $3 AND theirs.caller = $2 AND theirs.key = $3`,
    [`user:${alice.user.id}`, `user:${bob.user.id}`, key],
  );
  t.equal(moved.rowCount, 1, "Alice's sealed answer is now in Bob's row");
  const retry = await call(app, 'POST', '/v1/users', { headers: keyed(bob, key), body: { name: 'sealed' } });
  t.equal(retry.status, 500, 'the answer does not open under his caller and key');
  t.equal(retry.body.error, 'internal_error');
  t.notOk(retry.res.payload.includes(a.body.user.id), "nothing of Alice's answer reaches Bob");
});

t.test('a refused create stores nothing: the retry runs again', async (t) => {
  const org = await createOrg(app, alice);
  const { blob, revision } = await createBlob(app, alice, org.id);
  await setOverride(app, 'workflow.sessions_per_revision', 'blob', blob.id, 0);
  const key = freshKey();
  const refused = await call(app, 'POST', `/v1/revisions/${revision.id}/create_session`, {
    headers: keyed(alice, key),
    body: {},
  });
  t.equal(refused.status, 400);
  t.equal(refused.body.error, 'limit_exceeded');
  t.equal(await count('idempotency_keys WHERE key = $1', [key]), 0, 'no key stored');
  await setOverride(app, 'workflow.sessions_per_revision', 'blob', blob.id, 5);
  const retried = await call(app, 'POST', `/v1/revisions/${revision.id}/create_session`, {
    headers: keyed(alice, key),
    body: {},
  });
  t.equal(retried.status, 200);
  t.equal(retried.res.headers['idempotent-replayed'], undefined, 'run afresh');
  t.equal(await sessionsOf(revision.id), 1);

  // A unique violation inside the key's transaction is the command's own refusal, not a 500.
  await call(app, 'POST', `/v1/revisions/${revision.id}/create_session`, { as: alice, body: { alias: 'taken' } });
  const taken = await call(app, 'POST', `/v1/revisions/${revision.id}/create_session`, {
    headers: keyed(alice, freshKey()),
    body: { alias: 'taken' },
  });
  t.equal(taken.status, 409);
  t.equal(taken.body.error, 'alias_taken');
  const orgTaken = await call(app, 'POST', '/v1/orgs', {
    headers: keyed(alice, freshKey()),
    body: { alias: org.alias },
  });
  t.equal(orgTaken.status, 409);
  t.equal(orgTaken.body.error, 'alias_taken');
});

t.test('concurrent duplicates of a refused create are each refused, and store nothing', async (t) => {
  const org = await createOrg(app, alice);
  const { blob, revision } = await createBlob(app, alice, org.id);
  await setOverride(app, 'workflow.sessions_per_revision', 'blob', blob.id, 0);
  const key = freshKey();
  const send = () =>
    call(app, 'POST', `/v1/revisions/${revision.id}/create_session`, {
      headers: keyed(alice, key),
      body: { alias: 'only' },
    });
  // Each runs itself once the one before it rolled back, and is refused too; one that arrives while
  // another still runs is answered 409 "in progress" at once.
  const refused = await Promise.all(Array.from({ length: 10 }, send));
  t.ok(
    refused.every((a) => (a.status === 400 ? a.body.error === 'limit_exceeded' : inProgress(a))),
    'refused, or in progress',
  );
  t.ok(
    refused.some((a) => a.status === 400),
    'the first is refused by the quota',
  );
  t.equal(await count('idempotency_keys WHERE key = $1', [key]), 0);
  await setOverride(app, 'workflow.sessions_per_revision', 'blob', blob.id, 5);
  const created = await Promise.all(Array.from({ length: 10 }, send));
  const answered = created.filter((a) => !inProgress(a));
  t.ok(answered.length >= 1 && answered.every((a) => a.status === 200), 'created, or in progress');
  t.equal(new Set(answered.map((a) => a.res.payload)).size, 1, 'one answer');
  t.equal(await sessionsOf(revision.id), 1);
});

/** Polls `probe` until it holds (every 20 ms): a test waits for a state, never for a time. */
async function until(probe: () => Promise<boolean>): Promise<void> {
  while (!(await probe())) await new Promise((resolve) => setTimeout(resolve, 20));
}

const lockWaits = () => lockWaitsOf(db);

t.test('a duplicate of a request still running is 409 "in progress" at once, holding no connection', async (t) => {
  const org = await createOrg(app, alice);
  const { revision } = await createBlob(app, alice, org.id);
  const key = freshKey();
  const send = () =>
    call(app, 'POST', `/v1/revisions/${revision.id}/create_session`, { headers: keyed(alice, key), body: {} });
  // Holding the revision's row makes the first request's insert (its foreign key check) wait.
  const holder = await db.pool.connect();
  t.teardown(() => holder.release());
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM revisions WHERE id = $1::uuid FOR UPDATE', [revision.id]);
  const first = send();
  await until(async () => (await lockWaits()) === 1);
  // The duplicate either answers, or waits on the first one's key with a connection of the pool.
  const duplicate = send();
  const outcome = await Promise.race([
    duplicate.then((answer) => ({ answer })),
    until(async () => (await lockWaits()) >= 2).then(() => ({ answer: undefined })),
  ]);
  await holder.query('ROLLBACK');
  t.ok(outcome.answer !== undefined, 'the duplicate did not wait on the first request');
  if (outcome.answer !== undefined) {
    t.equal(outcome.answer.status, 409);
    t.equal(outcome.answer.body.error, 'conflict');
    t.match(outcome.answer.body.message, /in progress/);
  }
  const created = await first;
  t.equal(created.status, 200);
  await duplicate;
  // Once the first has been answered, the retry gets its answer.
  const retry = await send();
  t.equal(retry.status, 200);
  t.equal(retry.res.payload, created.res.payload);
  t.equal(await sessionsOf(revision.id), 1);
});

t.test('20 concurrent creates of an execution with one key make one execution', async (t) => {
  const { rev, sessionId, definitionId } = await freshFlow();
  const key = freshKey();
  const body = { session_id: sessionId, definition_id: definitionId, input_data: { attempt: 'same' } };
  const answers = await Promise.all(
    Array.from({ length: 20 }, () =>
      call(app, 'POST', `/v1/revisions/${rev}/create_execution`, { headers: keyed(alice, key), body }),
    ),
  );
  const answered = answers.filter((a) => !inProgress(a));
  t.same(
    answered.map((a) => a.status),
    Array(answered.length).fill(200),
    'no 5xx, no refusal but "in progress"',
  );
  t.equal(new Set(answered.map((a) => a.res.payload)).size, 1, 'one answer, byte for byte');
  t.equal(answered.filter((a) => a.res.headers['idempotent-replayed'] === undefined).length, 1, 'one of them created');
  t.equal(await executionsOf(sessionId), 1, 'one execution');
  t.equal(
    await count("pgboss.job WHERE data->>'execution_id' = $1", [answered[0]!.body.execution.id]),
    1,
    'one wake-up job, committed with it',
  );
});

t.test('20 concurrent create_execution calls with one idempotency_key on one socket make one execution', async (t) => {
  const { rev, sessionId, definitionId } = await freshFlow();
  const key = freshKey();
  const client = await connect(t, await wsUrl(app), { headers: alice.headers });
  // Frames of one socket run concurrently (docs/commands.md).
  for (let id = 1; id <= 20; id += 1) {
    client.send({
      jsonrpc: '2.0',
      id,
      method: 'create_execution',
      params: { revision_id: rev, idempotency_key: key, session_id: sessionId, definition_id: definitionId },
    });
  }
  const frames = [];
  for (let i = 0; i < 20; i += 1) frames.push(await client.next());
  t.same(
    frames.filter((f) => f.error !== undefined && f.error.data?.error !== 'conflict'),
    [],
    'no errors but "in progress"',
  );
  const results = frames.filter((f) => f.error === undefined);
  t.ok(results.length >= 1);
  t.equal(new Set(results.map((f) => JSON.stringify(f.result))).size, 1, 'one answer');
  t.equal(await executionsOf(sessionId), 1, 'one execution');
});

t.test('keys live 24 hours: an older one is claimed afresh, and the retention sweep removes it', async (t) => {
  const key = freshKey();
  const young = freshKey();
  const first = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_session`, {
    headers: keyed(alice, key),
    body: {},
  });
  await call(app, 'POST', `/v1/revisions/${flow.rev}/create_session`, { headers: keyed(alice, young), body: {} });
  await db.query("UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second' WHERE key = $1", [key]);
  await db.query("UPDATE idempotency_keys SET created_at = now() - interval '23 hours 59 minutes' WHERE key = $1", [
    young,
  ]);
  const youngAgain = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_session`, {
    headers: keyed(alice, young),
    body: {},
  });
  t.equal(youngAgain.res.headers['idempotent-replayed'], 'true', 'under 24 hours: replayed');

  // Past 24 hours the same key is a new request, even before a sweep removed it.
  const late = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_session`, {
    headers: keyed(alice, key),
    body: {},
  });
  t.equal(late.status, 200);
  t.not(late.body.session.id, first.body.session.id, 'a new session');

  const stale = freshKey();
  await call(app, 'POST', `/v1/revisions/${flow.rev}/create_session`, { headers: keyed(alice, stale), body: {} });
  await db.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1", [stale]);
  const counts = await runRetentionSweep(db, { batchSize: 1 });
  t.equal(counts.idempotency_keys_removed, 1, 'only the key older than 24 hours');
  t.equal(await count('idempotency_keys WHERE key = $1', [stale]), 0);
  t.equal(await count('idempotency_keys WHERE key = ANY($1::text[])', [[key, young]]), 2, 'the younger keys stay');
});
