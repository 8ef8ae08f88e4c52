import t from 'tap';
import { buildTestApp, call } from './helpers/app.ts';
import {
  grant,
  humans,
  insertBlob,
  insertOrg,
  insertServiceAccount,
  keyAuth,
  mintKey,
  tokenAuth,
} from './helpers/access.ts';

const { app, db } = await buildTestApp(t);
const [owner, bob, carol, stranger] = await humans(app, 4);

t.test('granting is an upsert that keeps created_at and answers the member record', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const first = await call(app, 'POST', '/v1/members', {
    as: owner,
    body: { target: 'organization', target_id: org.alias, user_id: bob!.user.id, role: 'write' },
  });
  t.equal(first.status, 200);
  t.strictSame(Object.keys(first.body.member).sort(), [
    'created_at',
    'role',
    'target',
    'target_id',
    'updated_at',
    'user_id',
  ]);
  t.match(first.body.member, { target: 'organization', target_id: org.id, user_id: bob!.user.id, role: 'write' });

  const second = await call(app, 'POST', '/v1/members', {
    as: owner,
    body: { target: 'organization', target_id: org.id, user_id: bob!.user.id, role: 'admin' },
  });
  t.equal(second.status, 200);
  t.equal(second.body.member.role, 'admin');
  t.equal(second.body.member.created_at, first.body.member.created_at, 'the membership is updated, not duplicated');

  const list = await call(app, 'GET', `/v1/members/target/organization/${org.alias}`, { as: owner });
  t.equal(list.status, 200);
  t.equal(list.body.members.length, 1);
  t.match(list.body.members[0], { user_id: bob!.user.id, role: 'admin' });
});

t.test('granting and revoking need admin; listing needs read', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'write');
  await grant(app, owner!, 'organization', org.id, carol!.user.id, 'read');

  const byWriter = await call(app, 'POST', '/v1/members', {
    as: bob,
    body: { target: 'organization', target_id: org.id, user_id: stranger!.user.id, role: 'read' },
  });
  t.equal(byWriter.status, 403);
  t.equal(byWriter.body.error, 'forbidden');

  const readerLists = await call(app, 'GET', `/v1/members/target/organization/${org.id}`, { as: carol });
  t.equal(readerLists.status, 200);
  t.equal(readerLists.body.members.length, 2);

  const strangerLists = await call(app, 'GET', `/v1/members/target/organization/${org.id}`, { as: stranger });
  t.equal(strangerLists.status, 404);
  t.equal(strangerLists.body.error, 'not_found');

  const writerRevokes = await call(app, 'DELETE', '/v1/members', {
    as: bob,
    body: { target: 'organization', target_id: org.id, user_id: carol!.user.id },
  });
  t.equal(writerRevokes.status, 403);
  t.equal(writerRevokes.body.error, 'forbidden');

  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'admin');
  const adminRevokes = await call(app, 'DELETE', '/v1/members', {
    as: bob,
    body: { target: 'organization', target_id: org.id, user_id: carol!.user.id },
  });
  t.equal(adminRevokes.status, 200);
  t.match(adminRevokes.body.member, { user_id: carol!.user.id, role: 'read' });

  const again = await call(app, 'DELETE', '/v1/members', {
    as: bob,
    body: { target: 'organization', target_id: org.id, user_id: carol!.user.id },
  });
  t.equal(again.status, 404);
  t.equal(again.body.error, 'not_found');

  const carolGone = await call(app, 'GET', `/v1/members/target/organization/${org.id}`, { as: carol });
  t.equal(carolGone.status, 404, 'revocation takes standing away at once');
});

t.test('a member may leave without admin', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, carol!.user.id, 'read');
  const leave = await call(app, 'DELETE', '/v1/members', {
    as: carol,
    body: { target: 'organization', target_id: org.id, user_id: 'me' },
  });
  t.equal(leave.status, 200);
  t.equal(leave.body.member.user_id, carol!.user.id);
});

t.test('a public organization is readable by everyone but changeable by admins only', async (t) => {
  const org = await insertOrg(db, owner!.user.id, 'public');
  const list = await call(app, 'GET', `/v1/members/target/organization/${org.id}`, { as: stranger });
  t.equal(list.status, 200);
  t.strictSame(list.body.members, []);
  const add = await call(app, 'POST', '/v1/members', {
    as: stranger,
    body: { target: 'organization', target_id: org.id, user_id: 'me', role: 'admin' },
  });
  t.equal(add.status, 403);
  t.equal(add.body.error, 'forbidden');
});

t.test('an organization membership reaches its blobs; a blob membership only its blob', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const blobA = await insertBlob(db, org.id);
  const blobB = await insertBlob(db, org.id);
  await grant(app, owner!, 'blob', blobA.alias, carol!.user.id, 'admin');
  t.equal((await call(app, 'GET', `/v1/members/target/blob/${blobA.id}`, { as: carol })).status, 200);
  t.equal((await call(app, 'GET', `/v1/members/target/blob/${blobB.id}`, { as: carol })).status, 404);
  t.equal((await call(app, 'GET', `/v1/members/target/organization/${org.id}`, { as: carol })).status, 404);
  const grantOnA = await call(app, 'POST', '/v1/members', {
    as: carol,
    body: { target: 'blob', target_id: blobA.id, user_id: bob!.user.id, role: 'read' },
  });
  t.equal(grantOnA.status, 200, 'a blob admin administers its blob');

  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'read');
  t.equal((await call(app, 'GET', `/v1/members/target/blob/${blobB.id}`, { as: bob })).status, 200);
  const bobGrants = await call(app, 'POST', '/v1/members', {
    as: bob,
    body: { target: 'blob', target_id: blobB.id, user_id: carol!.user.id, role: 'read' },
  });
  t.equal(bobGrants.status, 403);
});

t.test('bad requests', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const cases: Array<[string, string, unknown, number, string]> = [
    [
      'POST',
      '/v1/members',
      { target: 'user', target_id: owner!.user.id, user_id: bob!.user.id, role: 'read' },
      400,
      'invalid_request_body',
    ],
    [
      'POST',
      '/v1/members',
      { target: 'organization', target_id: org.id, user_id: bob!.user.id, role: 'owner' },
      400,
      'invalid_request_body',
    ],
    [
      'POST',
      '/v1/members',
      { target: 'organization', target_id: org.id, user_id: bob!.user.id, role: 'read', extra: 1 },
      400,
      'invalid_request_body',
    ],
    [
      'POST',
      '/v1/members',
      { target: 'organization', target_id: org.id, user_id: 'no-such-user', role: 'read' },
      404,
      'not_found',
    ],
    [
      'POST',
      '/v1/members',
      { target: 'organization', target_id: 'no-such-org', user_id: bob!.user.id, role: 'read' },
      404,
      'not_found',
    ],
    ['DELETE', '/v1/members', { target: 'organization', target_id: org.id }, 400, 'invalid_request_body'],
    ['GET', '/v1/members/target/user/me', undefined, 400, 'invalid_request_body'],
  ];
  for (const [method, url, body, status, error] of cases) {
    const res = await call(app, method, url, { as: owner, body });
    t.equal(res.status, status, `${method} ${url} ${JSON.stringify(body)}`);
    t.equal(res.body.error, error);
  }
});

t.test('perimeter: a service account with its own key may list but not grant or revoke', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const bot = await insertServiceAccount(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bot.id, 'admin');
  await grant(app, owner!, 'organization', org.id, carol!.user.id, 'read');
  const { key } = await mintKey(app, owner!, 'user', bot.id, 'admin');
  const as = keyAuth(key);

  const list = await call(app, 'GET', `/v1/members/target/organization/${org.id}`, { as });
  t.equal(list.status, 200);
  const add = await call(app, 'POST', '/v1/members', {
    as,
    body: { target: 'organization', target_id: org.id, user_id: stranger!.user.id, role: 'read' },
  });
  t.equal(add.status, 403);
  t.equal(add.body.error, 'forbidden');
  const remove = await call(app, 'DELETE', '/v1/members', {
    as,
    body: { target: 'organization', target_id: org.id, user_id: carol!.user.id },
  });
  t.equal(remove.status, 403);
  t.equal(remove.body.error, 'forbidden');
  const leave = await call(app, 'DELETE', '/v1/members', {
    as,
    body: { target: 'organization', target_id: org.id, user_id: 'me' },
  });
  t.equal(leave.status, 403, 'not even its own membership');

  const acting = tokenAuth(await app.ctx.tokens.signActing(bot.id, owner!.user.id));
  const byActing = await call(app, 'POST', '/v1/members', {
    as: acting,
    body: { target: 'organization', target_id: org.id, user_id: stranger!.user.id, role: 'read' },
  });
  t.equal(byActing.status, 200, 'an acting token has a human behind it');
  const revokeActing = await call(app, 'DELETE', '/v1/members', {
    as: acting,
    body: { target: 'organization', target_id: org.id, user_id: stranger!.user.id },
  });
  t.equal(revokeActing.status, 200);
});

t.test('a human with an admin key of its own is unaffected by the perimeter', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const { key } = await mintKey(app, owner!, 'organization', org.id, 'admin');
  const add = await call(app, 'POST', '/v1/members', {
    as: keyAuth(key),
    body: { target: 'organization', target_id: org.id, user_id: bob!.user.id, role: 'read' },
  });
  t.equal(add.status, 200);
});

t.test('memberships go with their organization and their account', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const bot = await insertServiceAccount(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bot.id, 'write');
  await db.query('DELETE FROM users WHERE id = $1', [bot.id]);
  const list = await call(app, 'GET', `/v1/members/target/organization/${org.id}`, { as: owner });
  t.strictSame(list.body.members, []);
  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'write');
  await db.query('DELETE FROM orgs WHERE id = $1', [org.id]);
  const { rows } = await db.query('SELECT 1 FROM memberships WHERE org_id = $1', [org.id]);
  t.equal(rows.length, 0);
});
