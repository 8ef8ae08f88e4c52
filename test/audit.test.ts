import t from 'tap';
import { listAuditEntries } from '../control-plane/audit/audit-log.ts';
import { buildOpsApp } from '../control-plane/ops/app.ts';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { actAs, apiKey, createBlob, createOrg, createServiceAccount, grant, mintKey } from './helpers/accounts.ts';
import { connect, wsUrl } from './helpers/ws-client.ts';
import { opsRequest } from './helpers/ops.ts';

const { app, db, config } = await buildTestApp(t);

async function entriesFor(requestId: string) {
  const { rows } = await db.query('SELECT * FROM audit_log WHERE request_id = $1 ORDER BY id', [requestId]);
  return rows;
}

async function countEntries(): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_log');
  return rows[0]!.n;
}

const alice = await signInAnonymous(app);
const bot = await createServiceAccount(app, alice.headers, 'audited-bot');
const botActing = await actAs(app, alice.headers, bot.id);
const botKey = await mintKey(app, alice.headers, 'user', bot.id, 'admin');

t.test('an allowed perimeter operation is recorded with its actor, credential and resolved target', async (t) => {
  const res = await call(app, 'POST', '/v1/users', { as: alice, body: { name: 'recorded' } });
  t.equal(res.status, 201);
  const rows = await entriesFor(res.res.headers['x-request-id'] as string);
  t.equal(rows.length, 1);
  t.match(rows[0], {
    actor_id: alice.user.id,
    human_id: alice.user.id,
    credential: 'bearer',
    api_key_id: null,
    operation: 'account.create',
    method: 'POST',
    route: '/v1/users',
    target_type: 'user',
    target_id: res.body.user.id,
    outcome: 'allowed',
    error: null,
    status: 201,
  });
  t.ok(rows[0].at, 'timestamped');
});

t.test("a refused perimeter operation by a service account's own key is recorded with its code", async (t) => {
  const org = await createOrg(app, alice.headers, 'audit-org');
  const res = await call(app, 'POST', '/v1/api-keys', {
    headers: apiKey(botKey.key),
    body: { target: 'organization', target_id: org.id, role: 'admin' },
  });
  t.equal(res.status, 403);
  const rows = await entriesFor(res.res.headers['x-request-id'] as string);
  t.equal(rows.length, 1);
  t.match(rows[0], {
    actor_id: bot.id,
    human_id: null,
    credential: 'api_key',
    api_key_id: botKey.id,
    operation: 'api_key.mint',
    target_type: 'organization',
    target_id: org.id,
    outcome: 'refused',
    error: 'forbidden',
    status: 403,
  });
});

t.test('the other perimeter routes are covered too: keys, credentials, members, accounts, impersonate', async (t) => {
  const org = await createOrg(app, botActing, 'audit-bot-org');
  const carol = await signInAnonymous(app);
  const requests: Array<[string, string, string, unknown, string, string | null]> = [
    [
      'member.grant',
      'POST',
      '/v1/members',
      { target: 'organization', target_id: org.id, user_id: carol.user.id, role: 'read' },
      'organization',
      org.id,
    ],
    [
      'member.revoke',
      'DELETE',
      '/v1/members',
      { target: 'organization', target_id: org.id, user_id: carol.user.id },
      'organization',
      org.id,
    ],
    [
      'credential.store',
      'POST',
      '/v1/credentials',
      { target: 'organization', target_id: org.id, name: 'n', secret: 's' },
      'organization',
      org.id,
    ],
    ['api_key.mint', 'POST', '/v1/api-keys', { target: 'user', target_id: bot.id, role: 'read' }, 'user', bot.id],
    [
      'api_key.mint',
      'POST',
      '/v1/api-keys',
      { target: 'organization', target_id: org.id, role: 'read' },
      'organization',
      org.id,
    ],
  ];
  for (const [operation, method, url, body, targetType, targetId] of requests) {
    const res = await call(app, method, url, { headers: botActing, body });
    const rows = await entriesFor(res.res.headers['x-request-id'] as string);
    t.equal(rows.length, 1, `${operation}: one entry`);
    t.match(
      rows[0],
      {
        operation,
        actor_id: bot.id,
        human_id: alice.user.id,
        credential: 'acting',
        target_type: targetType,
        target_id: targetId,
        outcome: res.status < 400 ? 'allowed' : 'refused',
        status: res.status,
      },
      operation,
    );
    if (res.status >= 400) t.equal(rows[0].error, res.body.error, `${operation}: the refusal's code`);
  }
  const last = await entriesFor(
    (
      await call(app, 'POST', '/v1/api-keys', {
        headers: botActing,
        body: { target: 'blob', target_id: 'nope-blob', role: 'read' },
      })
    ).res.headers['x-request-id'] as string,
  );
  t.match(last[0], { outcome: 'refused', error: 'cannot_mint_while_acting', status: 400 });

  const sub = await createServiceAccount(app, botActing, 'audited-sub');
  for (const [operation, method, url, body] of [
    ['acting_token.mint', 'POST', '/v1/auth/core/impersonate', { user_id: sub.id }],
    ['account.delete', 'DELETE', `/v1/users/${sub.id}`, undefined],
  ] as const) {
    const res = await call(app, method, url, { headers: botActing, ...(body ? { body } : {}) });
    t.equal(res.status, 200, operation);
    const rows = await entriesFor(res.res.headers['x-request-id'] as string);
    t.match(rows, [{ operation, target_type: 'user', target_id: sub.id, outcome: 'allowed' }], operation);
  }
});

t.test("every acting-token request is recorded, reads included; a human's ordinary requests are not", async (t) => {
  const read = await call(app, 'GET', '/v1/users/me', { headers: botActing });
  t.equal(read.status, 200);
  t.match(await entriesFor(read.res.headers['x-request-id'] as string), [
    {
      operation: 'GET /v1/users/:user_id',
      route: '/v1/users/:user_id',
      actor_id: bot.id,
      human_id: alice.user.id,
      credential: 'acting',
      target_type: null,
      outcome: 'allowed',
      status: 200,
    },
  ]);
  const missing = await call(app, 'GET', '/v1/orgs/no-such-org', { headers: botActing });
  t.match(await entriesFor(missing.res.headers['x-request-id'] as string), [
    { outcome: 'refused', error: 'not_found', status: 404 },
  ]);

  const before = await countEntries();
  t.equal((await call(app, 'GET', '/v1/users/me', { as: alice })).status, 200);
  t.equal((await call(app, 'GET', '/v1/users/me', { headers: apiKey(botKey.key) })).status, 200);
  t.equal((await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { name: 'Alice' } })).status, 200);
  t.equal((await call(app, 'GET', '/v1/users/me')).status, 401);
  t.equal(await countEntries(), before, 'nothing recorded');
});

t.test('a visibility change is audited; a PATCH that changes no visibility is not', async (t) => {
  const owner = await signInAnonymous(app);
  const org = await createOrg(app, owner.headers, 'audit-visibility');
  const blob = await createBlob(app, owner.headers, org.id, 'audit-visibility-blob');
  await grant(app, owner.headers, 'organization', org.id, bot.id, 'admin');

  const before = await countEntries();
  t.equal(
    (await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: owner, body: { visibility: 'private', name: 'n' } })).status,
    200,
  );
  t.equal(
    (await call(app, 'PATCH', `/v1/blobs/${org.id}/${blob.id}`, { headers: apiKey(botKey.key), body: { name: 'n' } }))
      .status,
    200,
  );
  t.equal(await countEntries(), before, 'unchanged visibility: nothing recorded');

  const refused = await call(app, 'PATCH', `/v1/orgs/${org.id}`, {
    headers: apiKey(botKey.key),
    body: { visibility: 'public' },
  });
  t.equal(refused.status, 403);
  t.match(await entriesFor(refused.res.headers['x-request-id'] as string), [
    {
      operation: 'org.visibility.change',
      actor_id: bot.id,
      human_id: null,
      target_type: 'organization',
      target_id: org.id,
      outcome: 'refused',
      error: 'forbidden',
    },
  ]);
  const allowed = await call(app, 'PATCH', `/v1/blobs/${org.id}/${blob.id}`, {
    as: owner,
    body: { visibility: 'public' },
  });
  t.equal(allowed.status, 200);
  t.match(await entriesFor(allowed.res.headers['x-request-id'] as string), [
    {
      operation: 'blob.visibility.change',
      actor_id: owner.user.id,
      credential: 'bearer',
      target_type: 'blob',
      target_id: blob.id,
      outcome: 'allowed',
    },
  ]);
});

t.test('an acting-token WebSocket connection is recorded', async (t) => {
  const client = await connect(t, await wsUrl(app), { headers: botActing });
  const { rows } = await db.query(
    `SELECT * FROM audit_log WHERE operation = 'websocket.connect' AND actor_id = $1::uuid`,
    [bot.id],
  );
  t.match(rows, [{ human_id: alice.user.id, credential: 'acting', route: '/v1', outcome: 'allowed', status: 101 }]);
  client.socket.close();
});

t.test('entries outlive the accounts they name', async (t) => {
  const gone = await createServiceAccount(app, alice.headers, 'short-lived');
  await call(app, 'GET', '/v1/users/me', { headers: await actAs(app, alice.headers, gone.id) });
  t.equal((await call(app, 'DELETE', `/v1/users/${gone.id}`, { as: alice })).status, 200);
  t.equal((await listAuditEntries(db, { actorId: gone.id })).length, 1);
});

t.test('listAuditEntries filters and pages newest first', async (t) => {
  const all = await listAuditEntries(db, { humanId: alice.user.id, limit: 1000 });
  t.ok(all.length > 5);
  t.ok(
    all.every((e, i) => i === 0 || e.id < all[i - 1]!.id),
    'newest first',
  );
  const page = await listAuditEntries(db, { humanId: alice.user.id, limit: 2, beforeId: all[1]!.id });
  t.same(
    page.map((e) => e.id),
    [all[2]!.id, all[3]!.id],
  );
  const mints = await listAuditEntries(db, { actorId: bot.id, operation: 'api_key.mint' });
  t.ok(mints.length >= 3);
  t.ok(mints.every((e) => e.actor_id === bot.id && e.operation === 'api_key.mint'));
});

t.test('the operations API answers auditLog', async (t) => {
  // Only auditLog is queried, which reads the database; the queue is never touched.
  const ops = await buildOpsApp({ config, db, boss: {} as never, logger: false });
  t.teardown(() => ops.close());
  const graphql = async (query: string) => (await opsRequest(ops, query, `Bearer ${config.secrets.OPS_TOKEN}`)).body;

  const body = await graphql(
    `{ auditLog(limit: 2, actorId: "${bot.id}") { id at actorId humanId credential operation outcome error status targetType targetId requestId route method apiKeyId } }`,
  );
  t.equal(body.errors, undefined);
  t.equal(body.data.auditLog.length, 2);
  const expected = await listAuditEntries(db, { actorId: bot.id, limit: 2 });
  t.same(
    body.data.auditLog.map((e: any) => [e.id, e.operation, e.outcome]),
    expected.map((e) => [String(e.id), e.operation, e.outcome]),
  );
  t.ok(body.data.auditLog.every((e: any) => e.actorId === bot.id));

  for (const bad of [
    'auditLog(limit: 0)',
    'auditLog(limit: 1001)',
    'auditLog(actorId: "not-a-uuid")',
    'auditLog(beforeId: "x")',
  ]) {
    const refused = await graphql(`{ ${bad} { id } }`);
    t.equal(refused.errors?.[0]?.extensions?.code, 'invalid_argument', bad);
  }
});
