import t from 'tap';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { actAs, apiKey, createBlob, createOrg, createServiceAccount, grant, mintKey } from './helpers/accounts.ts';

const { app, db } = await buildTestApp(t);

async function userExists(id: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM users WHERE id = $1::uuid', [id]);
  return rows.length === 1;
}

async function countUsers(): Promise<number> {
  const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM users');
  return rows[0]!.n;
}

t.test('POST /users creates a service account owned by the caller', async (t) => {
  const alice = await signInAnonymous(app);
  const { status, body } = await call(app, 'POST', '/v1/users', {
    as: alice,
    body: { name: 'Deploy bot', alias: 'deploy-bot' },
  });
  t.equal(status, 201);
  t.same(Object.keys(body.user).sort(), [
    'alias',
    'anonymous',
    'created_at',
    'email',
    'id',
    'kind',
    'name',
    'owner_id',
  ]);
  t.match(body, {
    status: 'success',
    user: {
      alias: 'deploy-bot',
      name: 'Deploy bot',
      kind: 'service',
      owner_id: alice.user.id,
      anonymous: false,
      email: null,
    },
  });
  const { rows } = await db.query('SELECT kind, owner_id FROM users WHERE id = $1::uuid', [body.user.id]);
  t.same(rows, [{ kind: 'service', owner_id: alice.user.id }]);
});

t.test('POST /users validates the body and the alias', async (t) => {
  const alice = await signInAnonymous(app);
  await createServiceAccount(app, alice.headers, 'bot', 'taken-alias');
  const before = await countUsers();
  const cases: Array<[unknown, number, string]> = [
    [{}, 400, 'invalid_request_body'],
    [{ name: '' }, 400, 'invalid_request_body'],
    [{ name: 'x', extra: 1 }, 400, 'invalid_request_body'],
    [{ name: 'x', alias: '0b6f7a4e-8a5c-4c1e-9a43-5f1b0b7d3e21' }, 400, 'invalid_request_body'],
    [{ name: 'x', alias: 'me' }, 400, 'invalid_request_body'],
    [{ name: 'x', alias: 'taken-alias' }, 409, 'alias_taken'],
  ];
  for (const [body, status, error] of cases) {
    const res = await call(app, 'POST', '/v1/users', { as: alice, body });
    t.equal(res.status, status, JSON.stringify(body));
    t.equal(res.body.error, error, JSON.stringify(body));
  }
  t.equal(await countUsers(), before, 'nothing was created');
});

t.test('under an acting token, POST /users creates an account owned by the service account', async (t) => {
  const alice = await signInAnonymous(app);
  const bot = await createServiceAccount(app, alice.headers);
  const acting = await actAs(app, alice.headers, bot.id);
  const { status, body } = await call(app, 'POST', '/v1/users', { headers: acting, body: { name: 'sub-bot' } });
  t.equal(status, 201);
  t.equal(body.user.owner_id, bot.id);
  t.equal(body.user.kind, 'service');
});

t.test(
  "POST /users with API keys: a service account's own key is refused; a human key needs admin over itself",
  async (t) => {
    const alice = await signInAnonymous(app);
    const bot = await createServiceAccount(app, alice.headers);
    const botKey = await mintKey(app, alice.headers, 'user', bot.id, 'admin');
    const before = await countUsers();
    const refused = await call(app, 'POST', '/v1/users', { headers: apiKey(botKey.key), body: { name: 'x' } });
    t.equal(refused.status, 403);
    t.equal(refused.body.error, 'forbidden');

    const readKey = await mintKey(app, alice.headers, 'user', alice.user.id, 'read');
    const capped = await call(app, 'POST', '/v1/users', { headers: apiKey(readKey.key), body: { name: 'x' } });
    t.equal(capped.status, 403, 'a read key is capped');
    t.equal(capped.body.error, 'forbidden');

    const org = await createOrg(app, alice.headers, 'sa-keys-org');
    const orgKey = await mintKey(app, alice.headers, 'organization', org.id, 'admin');
    const confined = await call(app, 'POST', '/v1/users', { headers: apiKey(orgKey.key), body: { name: 'x' } });
    t.equal(confined.status, 403, 'an organization key reaches no account');
    t.equal(await countUsers(), before, 'nothing was created');

    const adminKey = await mintKey(app, alice.headers, 'user', alice.user.id, 'admin');
    const created = await call(app, 'POST', '/v1/users', { headers: apiKey(adminKey.key), body: { name: 'x' } });
    t.equal(created.status, 201, "a human's admin user key may");
    t.equal(created.body.user.owner_id, alice.user.id);
  },
);

t.test('DELETE /users/:id retires a service account: its keys and memberships go at once', async (t) => {
  const alice = await signInAnonymous(app);
  const bot = await createServiceAccount(app, alice.headers, 'bot', 'retire-me');
  const org = await createOrg(app, alice.headers, 'retire-org');
  await grant(app, alice.headers, 'organization', org.id, bot.id, 'write');
  const key = await mintKey(app, alice.headers, 'user', bot.id, 'admin');
  t.equal((await call(app, 'GET', '/v1/users/me', { headers: apiKey(key.key) })).status, 200, 'the key works before');

  const mallory = await signInAnonymous(app);
  const other = await call(app, 'DELETE', `/v1/users/${bot.id}`, { as: mallory });
  t.equal(other.status, 403, 'another human may not retire it');
  t.equal(other.body.error, 'forbidden');
  t.ok(await userExists(bot.id));

  const { status, body } = await call(app, 'DELETE', '/v1/users/retire-me', { as: alice });
  t.equal(status, 200);
  t.match(body, { status: 'success', user: { id: bot.id, kind: 'service', owner_id: alice.user.id } });
  t.notOk(await userExists(bot.id));
  const after = await call(app, 'GET', '/v1/users/me', { headers: apiKey(key.key) });
  t.equal(after.status, 401, 'the key stopped working');
  const { rows } = await db.query(
    `SELECT (SELECT count(*) FROM memberships WHERE user_id = $1::uuid)::int AS members,
            (SELECT count(*) FROM api_keys WHERE user_id = $1::uuid OR target_user_id = $1::uuid)::int AS keys`,
    [bot.id],
  );
  t.same(rows, [{ members: 0, keys: 0 }]);

  const again = await call(app, 'DELETE', `/v1/users/${bot.id}`, { as: alice });
  t.equal(again.status, 404);
  t.equal(again.body.error, 'not_found');
});

t.test("a service account's own key cannot retire it; its acting token can", async (t) => {
  const alice = await signInAnonymous(app);
  const bot = await createServiceAccount(app, alice.headers);
  const key = await mintKey(app, alice.headers, 'user', bot.id, 'admin');
  const refused = await call(app, 'DELETE', '/v1/users/me', { headers: apiKey(key.key) });
  t.equal(refused.status, 403);
  t.equal(refused.body.error, 'forbidden');
  t.ok(await userExists(bot.id));
  const acting = await actAs(app, alice.headers, bot.id);
  const retired = await call(app, 'DELETE', '/v1/users/me', { headers: acting });
  t.equal(retired.status, 200);
  t.notOk(await userExists(bot.id));
});

t.test('a human deletes its own account: 409 while it or its service accounts own organizations', async (t) => {
  const alice = await signInAnonymous(app);
  const bot = await createServiceAccount(app, alice.headers);
  const subBot = await createServiceAccount(app, await actAs(app, alice.headers, bot.id));
  const org = await createOrg(app, alice.headers, 'alice-owned-org');

  const owns = await call(app, 'DELETE', '/v1/users/me', { as: alice });
  t.equal(owns.status, 409);
  t.equal(owns.body.error, 'conflict');
  t.ok(await userExists(alice.user.id));

  t.equal((await call(app, 'DELETE', `/v1/orgs/${org.id}`, { as: alice })).status, 200);
  // An organization owned two levels down holds the account as well.
  const botOrg = await createOrg(app, await actAs(app, alice.headers, bot.id), 'bot-owned-org');
  const botOwns = await call(app, 'DELETE', `/v1/users/${alice.user.id}`, { as: alice });
  t.equal(botOwns.status, 409);
  t.equal(botOwns.body.error, 'conflict');
  t.equal(
    (await call(app, 'DELETE', `/v1/orgs/${botOrg.id}`, { headers: await actAs(app, alice.headers, bot.id) })).status,
    200,
  );

  const mallory = await signInAnonymous(app);
  const other = await call(app, 'DELETE', `/v1/users/${alice.user.id}`, { as: mallory });
  t.equal(other.status, 403, 'nobody else may delete a human');

  const { status, body } = await call(app, 'DELETE', '/v1/users/me', { as: alice });
  t.equal(status, 200);
  t.equal(body.user.id, alice.user.id);
  for (const id of [alice.user.id, bot.id, subBot.id])
    t.notOk(await userExists(id), 'account and its service accounts are gone');
  const after = await call(app, 'GET', '/v1/users/me', { as: alice });
  t.equal(after.status, 401, 'its bearer token stopped working');
});

t.test('GET /users/target/user/:id lists the service accounts the user owns', async (t) => {
  const alice = await signInAnonymous(app);
  const a = await createServiceAccount(app, alice.headers, 'a');
  const b = await createServiceAccount(app, alice.headers, 'b');
  await createServiceAccount(app, await actAs(app, alice.headers, a.id), 'nested');
  const { status, body } = await call(app, 'GET', '/v1/users/target/user/me', { as: alice });
  t.equal(status, 200);
  t.same(
    body.users.map((u: any) => u.user.id),
    [a.id, b.id],
    'direct ones only, oldest first',
  );
  t.match(body.users[0], { user: { id: a.id, kind: 'service', owner_id: alice.user.id } });

  const mallory = await signInAnonymous(app);
  const other = await call(app, 'GET', `/v1/users/target/user/${alice.user.id}`, { as: mallory });
  t.equal(other.status, 403);
  t.equal(other.body.error, 'forbidden');
  const missing = await call(app, 'GET', '/v1/users/target/user/nobody-here', { as: mallory });
  t.equal(missing.status, 404);
  t.equal(missing.body.error, 'not_found');
  const bad = await call(app, 'GET', '/v1/users/target/team/x', { as: alice });
  t.equal(bad.status, 400);
  t.equal(bad.body.error, 'invalid_request_body');
});

t.test('GET /users/target/organization|blob lists every account with standing there', async (t) => {
  const owner = await signInAnonymous(app);
  const orgMember = await signInAnonymous(app);
  const blobMember = await signInAnonymous(app);
  const both = await signInAnonymous(app);
  const org = await createOrg(app, owner.headers, 'standing-org');
  const blob = await createBlob(app, owner.headers, org.id, 'standing-blob');
  await grant(app, owner.headers, 'organization', org.id, orgMember.user.id, 'write');
  await grant(app, owner.headers, 'blob', blob.id, blobMember.user.id, 'read');
  await grant(app, owner.headers, 'organization', org.id, both.user.id, 'read');
  await grant(app, owner.headers, 'blob', blob.id, both.user.id, 'admin');

  const onOrg = await call(app, 'GET', `/v1/users/target/organization/${org.id}`, { as: orgMember });
  t.equal(onOrg.status, 200);
  t.same(
    onOrg.body.users.map((u: any) => [u.user.id, u.role, u.via]),
    [
      [owner.user.id, 'admin', 'owner'],
      [orgMember.user.id, 'write', 'member'],
      [both.user.id, 'read', 'member'],
    ],
  );
  t.notOk('email' in onOrg.body.users[0].user, 'others get the public profile');
  t.ok('email' in onOrg.body.users[1].user, 'the caller gets its own full profile');

  const onBlob = await call(app, 'GET', `/v1/users/target/blob/${blob.id}`, { as: owner });
  t.equal(onBlob.status, 200);
  t.same(
    onBlob.body.users.map((u: any) => [u.user.id, u.role, u.via]),
    [
      [owner.user.id, 'admin', 'owner'],
      [both.user.id, 'admin', 'member'],
      [orgMember.user.id, 'write', 'org_member'],
      [blobMember.user.id, 'read', 'member'],
    ],
    'one entry per account, its highest role and where it comes from',
  );

  const stranger = await signInAnonymous(app);
  const hidden = await call(app, 'GET', `/v1/users/target/organization/${org.id}`, { as: stranger });
  t.equal(hidden.status, 404, 'a private organization does not exist for a stranger');
  t.equal(hidden.body.error, 'not_found');
  const blobOnly = await call(app, 'GET', `/v1/users/target/organization/${org.id}`, { as: blobMember });
  t.equal(blobOnly.status, 404, 'a blob membership gives nothing on the organization');
});
