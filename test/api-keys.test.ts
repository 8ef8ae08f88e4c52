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
const [owner, bob, stranger] = await humans(app, 3);

const membersOf = (target: string, id: string) => `/v1/members/target/${target}/${id}`;

t.test('minting answers the key once, in a recognisable format; listings never carry it', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const res = await call(app, 'POST', '/v1/api-keys', {
    as: owner,
    body: { target: 'organization', target_id: org.alias, role: 'write', name: 'ci' },
  });
  t.equal(res.status, 201);
  const minted = res.body.api_key;
  t.match(minted.key, /^wsk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
  t.ok(minted.key.startsWith(minted.prefix + '_'), 'the prefix is the public start of the key');
  t.match(minted, {
    name: 'ci',
    target: 'organization',
    target_id: org.id,
    role: 'write',
    user_id: owner!.user.id,
    last_used_at: null,
  });

  const list = await call(app, 'GET', `/v1/api-keys/target/organization/${org.id}`, { as: owner });
  t.equal(list.status, 200);
  t.equal(list.body.api_keys.length, 1);
  const listed = list.body.api_keys[0];
  t.strictSame(Object.keys(listed).sort(), [
    'created_at',
    'created_by',
    'id',
    'last_used_at',
    'name',
    'prefix',
    'role',
    'target',
    'target_id',
    'user_id',
  ]);
  t.equal(listed.id, minted.id);
  t.notOk(JSON.stringify(list.body).includes(minted.key.slice(minted.prefix.length + 1)), 'no secret in the listing');

  const { rows } = await db.query('SELECT row_to_json(k)::text AS row FROM api_keys k WHERE id = $1', [minted.id]);
  // The secret is everything after the prefix: base64url may itself hold '_', so no split('_').
  t.notOk(rows[0].row.includes(minted.key.slice(minted.prefix.length + 1)), 'only a hash is stored');
});

t.test('last_used_at is recorded on use', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const { key, record } = await mintKey(app, owner!, 'organization', org.id, 'read');
  t.equal(record.last_used_at, null);
  t.equal((await call(app, 'GET', membersOf('organization', org.id), { as: keyAuth(key) })).status, 200);
  const list = await call(app, 'GET', `/v1/api-keys/target/organization/${org.id}`, { as: owner });
  const used = list.body.api_keys[0].last_used_at;
  t.type(used, 'string');
  t.ok(Date.parse(used) >= Date.parse(record.created_at));
});

t.test('role cap: a key acts with the lesser of its role and its user standing', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const blob = await insertBlob(db, org.id);
  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'admin');

  const readKey = await mintKey(app, bob!, 'organization', org.id, 'read');
  const refused = await call(app, 'POST', '/v1/members', {
    as: keyAuth(readKey.key),
    body: { target: 'organization', target_id: org.id, user_id: stranger!.user.id, role: 'read' },
  });
  t.equal(refused.status, 403, 'a read key of an admin member cannot grant');
  t.equal(refused.body.error, 'forbidden');
  t.equal((await call(app, 'GET', membersOf('organization', org.id), { as: keyAuth(readKey.key) })).status, 200);

  const writeOnBlob = await mintKey(app, owner!, 'blob', blob.id, 'write');
  const asAdmin = await call(app, 'POST', '/v1/members', {
    as: keyAuth(writeOnBlob.key),
    body: { target: 'blob', target_id: blob.id, user_id: stranger!.user.id, role: 'read' },
  });
  t.equal(asAdmin.status, 403, "a write key on a blob cannot act as admin, even the owner's");
  const mintMore = await call(app, 'POST', '/v1/api-keys', {
    as: keyAuth(writeOnBlob.key),
    body: { target: 'blob', target_id: blob.id, role: 'admin' },
  });
  t.equal(mintMore.status, 403, 'nor mint a stronger key');

  const adminKey = await mintKey(app, bob!, 'organization', org.id, 'admin');
  t.equal(
    (
      await call(app, 'POST', '/v1/members', {
        as: keyAuth(adminKey.key),
        body: { target: 'organization', target_id: org.id, user_id: stranger!.user.id, role: 'read' },
      })
    ).status,
    200,
  );
  // The cap follows the user's standing now, not when the key was minted.
  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'read');
  const demoted = await call(app, 'POST', '/v1/members', {
    as: keyAuth(adminKey.key),
    body: { target: 'organization', target_id: org.id, user_id: stranger!.user.id, role: 'write' },
  });
  t.equal(demoted.status, 403);

  const userKey = await mintKey(app, owner!, 'user', 'me', 'read');
  const userKeyGrants = await call(app, 'POST', '/v1/members', {
    as: keyAuth(userKey.key),
    body: { target: 'organization', target_id: org.id, user_id: stranger!.user.id, role: 'read' },
  });
  t.equal(userKeyGrants.status, 403, 'a read user key is capped as well');
});

t.test('confinement: an organization or blob key reaches nothing outside its target', async (t) => {
  const orgA = await insertOrg(db, owner!.user.id);
  const orgB = await insertOrg(db, owner!.user.id);
  const publicOrg = await insertOrg(db, stranger!.user.id, 'public');
  const blob1 = await insertBlob(db, orgA.id);
  const blob2 = await insertBlob(db, orgA.id);

  const orgKey = keyAuth((await mintKey(app, owner!, 'organization', orgA.id, 'admin')).key);
  t.equal((await call(app, 'GET', membersOf('organization', orgA.id), { as: orgKey })).status, 200);
  t.equal(
    (await call(app, 'GET', membersOf('blob', blob1.id), { as: orgKey })).status,
    200,
    'blobs in the organization are inside',
  );
  const other = await call(app, 'GET', membersOf('organization', orgB.id), { as: orgKey });
  t.equal(other.status, 404, 'another organization of the same owner does not exist for the key');
  t.equal(other.body.error, 'not_found');
  t.equal(
    (await call(app, 'GET', membersOf('organization', publicOrg.id), { as: orgKey })).status,
    404,
    'nor does a public one',
  );
  t.equal((await call(app, 'GET', '/v1/api-keys/target/user/me', { as: orgKey })).status, 404);
  const mintUserKey = await call(app, 'POST', '/v1/api-keys', {
    as: orgKey,
    body: { target: 'user', target_id: 'me', role: 'admin' },
  });
  t.equal(mintUserKey.status, 403, 'it cannot escape by minting a key for its user');

  const blobKey = keyAuth((await mintKey(app, owner!, 'blob', blob1.id, 'admin')).key);
  t.equal((await call(app, 'GET', membersOf('blob', blob1.id), { as: blobKey })).status, 200);
  t.equal(
    (await call(app, 'GET', membersOf('blob', blob2.id), { as: blobKey })).status,
    404,
    'a sibling blob does not exist for it',
  );
  t.equal(
    (await call(app, 'GET', membersOf('organization', orgA.id), { as: blobKey })).status,
    404,
    'nor does its organization',
  );
  const mintOrgKey = await call(app, 'POST', '/v1/api-keys', {
    as: blobKey,
    body: { target: 'organization', target_id: orgA.id, role: 'read' },
  });
  t.equal(mintOrgKey.status, 404);

  const userKey = keyAuth((await mintKey(app, owner!, 'user', owner!.user.id, 'read')).key);
  t.equal(
    (await call(app, 'GET', membersOf('organization', orgA.id), { as: userKey })).status,
    200,
    'a user key works everywhere',
  );
  t.equal((await call(app, 'GET', membersOf('organization', orgB.id), { as: userKey })).status, 200);
});

t.test('a service account: its key authenticates as it, with nobody behind it', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const bot = await insertServiceAccount(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bot.id, 'admin');
  const minted = await mintKey(app, owner!, 'user', bot.id, 'admin');
  t.equal(minted.record.user_id, bot.id);
  t.equal(minted.record.created_by, owner!.user.id);
  const as = keyAuth(minted.key);

  t.equal(
    (await call(app, 'GET', membersOf('organization', org.id), { as })).status,
    200,
    'product work and reads go on',
  );
  t.equal(
    (await call(app, 'GET', `/v1/api-keys/target/organization/${org.id}`, { as })).status,
    200,
    'listing keys is not governed',
  );
  for (const [method, body] of [
    ['POST', { target: 'organization', target_id: org.id, role: 'read' }],
    ['POST', { target: 'user', target_id: 'me', role: 'read' }],
    ['DELETE', { id: minted.record.id }],
  ] as const) {
    const res = await call(app, method, '/v1/api-keys', { as, body });
    t.equal(res.status, 403, `${method} ${JSON.stringify(body)}`);
    t.equal(res.body.error, 'forbidden');
  }

  const strangerMints = await call(app, 'POST', '/v1/api-keys', {
    as: stranger,
    body: { target: 'user', target_id: bot.id, role: 'read' },
  });
  t.equal(strangerMints.status, 403, 'only the owner has admin standing over the account');
  t.equal((await call(app, 'GET', `/v1/api-keys/target/user/${bot.id}`, { as: stranger })).status, 404);
  const ownerLists = await call(app, 'GET', `/v1/api-keys/target/user/${bot.id}`, { as: owner });
  t.equal(ownerLists.status, 200);
  t.equal(ownerLists.body.api_keys.length, 1);

  await db.query('DELETE FROM users WHERE id = $1', [bot.id]);
  const gone = await call(app, 'GET', membersOf('organization', org.id), { as });
  t.equal(gone.status, 401, "a retired account's key stops working");
  t.equal(gone.body.error, 'unauthorized');
});

t.test('acting tokens may mint user keys but not organization or blob keys', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const blob = await insertBlob(db, org.id);
  const bot = await insertServiceAccount(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bot.id, 'admin');
  const acting = tokenAuth(await app.ctx.tokens.signActing(bot.id, owner!.user.id));

  for (const [target, id] of [
    ['organization', org.id],
    ['blob', blob.id],
  ]) {
    const res = await call(app, 'POST', '/v1/api-keys', { as: acting, body: { target, target_id: id, role: 'read' } });
    t.equal(res.status, 400);
    t.equal(res.body.error, 'cannot_mint_while_acting');
  }
  const own = await call(app, 'POST', '/v1/api-keys', {
    as: acting,
    body: { target: 'user', target_id: 'me', role: 'write' },
  });
  t.equal(own.status, 201);
  t.equal(own.body.api_key.user_id, bot.id);
  const human = await call(app, 'POST', '/v1/api-keys', {
    as: acting,
    body: { target: 'user', target_id: owner!.user.id, role: 'write' },
  });
  t.equal(human.status, 403, 'acting as the service account gives no standing over the human');
  const revoke = await call(app, 'DELETE', '/v1/api-keys', { as: acting, body: { id: own.body.api_key.id } });
  t.equal(revoke.status, 200);
});

t.test('minting needs admin on the target', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'write');
  const writer = await call(app, 'POST', '/v1/api-keys', {
    as: bob,
    body: { target: 'organization', target_id: org.id, role: 'read' },
  });
  t.equal(writer.status, 403);
  t.equal(writer.body.error, 'forbidden');
  const outsider = await call(app, 'POST', '/v1/api-keys', {
    as: stranger,
    body: { target: 'organization', target_id: org.id, role: 'read' },
  });
  t.equal(outsider.status, 404);
  t.equal(outsider.body.error, 'not_found');
  const otherUser = await call(app, 'POST', '/v1/api-keys', {
    as: stranger,
    body: { target: 'user', target_id: owner!.user.id, role: 'read' },
  });
  t.equal(otherUser.status, 403);
  const bad = await call(app, 'POST', '/v1/api-keys', {
    as: owner,
    body: { target: 'organization', target_id: org.id, role: 'superuser' },
  });
  t.equal(bad.status, 400);
  t.equal(bad.body.error, 'invalid_request_body');
});

t.test('revocation: by the minter or an admin, effective at once', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  await grant(app, owner!, 'organization', org.id, bob!.user.id, 'admin');
  const bobs = await mintKey(app, bob!, 'organization', org.id, 'read');
  t.equal((await call(app, 'GET', membersOf('organization', org.id), { as: keyAuth(bobs.key) })).status, 200);

  const byStranger = await call(app, 'DELETE', '/v1/api-keys', { as: stranger, body: { id: bobs.record.id } });
  t.equal(byStranger.status, 404, 'a key the caller cannot see does not exist for it');
  await grant(app, owner!, 'organization', org.id, stranger!.user.id, 'read');
  const byReader = await call(app, 'DELETE', '/v1/api-keys', { as: stranger, body: { id: bobs.record.id } });
  t.equal(byReader.status, 403);
  t.equal(byReader.body.error, 'forbidden');

  const revoked = await call(app, 'DELETE', '/v1/api-keys', { as: owner, body: { id: bobs.record.id } });
  t.equal(revoked.status, 200);
  t.equal(revoked.body.api_key.id, bobs.record.id);
  t.notOk('key' in revoked.body.api_key);
  const after = await call(app, 'GET', membersOf('organization', org.id), { as: keyAuth(bobs.key) });
  t.equal(after.status, 401);
  t.equal(after.body.error, 'unauthorized');
  t.equal((await call(app, 'DELETE', '/v1/api-keys', { as: owner, body: { id: bobs.record.id } })).status, 404);
  t.equal((await call(app, 'DELETE', '/v1/api-keys', { as: owner, body: { id: 'not-a-uuid' } })).status, 404);

  // A minter who lost standing can still withdraw what it handed out.
  const second = await mintKey(app, bob!, 'organization', org.id, 'admin');
  await call(app, 'DELETE', '/v1/members', {
    as: owner,
    body: { target: 'organization', target_id: org.id, user_id: bob!.user.id },
  });
  t.equal(
    (await call(app, 'GET', membersOf('organization', org.id), { as: keyAuth(second.key) })).status,
    404,
    'the key reaches nothing now',
  );
  t.equal((await call(app, 'DELETE', '/v1/api-keys', { as: bob, body: { id: second.record.id } })).status, 200);
});

t.test('malformed and forged keys are 401', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const { key } = await mintKey(app, owner!, 'organization', org.id, 'admin');
  const forged = key.slice(0, -4) + (key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
  for (const attempt of ['', 'nonsense', 'wsk_0123456789abcdef_' + 'x'.repeat(43), forged, key + 'x']) {
    const res = await call(app, 'GET', membersOf('organization', org.id), { headers: { 'x-api-key': attempt } });
    t.equal(res.status, 401, JSON.stringify(attempt));
    t.equal(res.body.error, 'unauthorized');
  }
});

t.test('keys go with their target', async (t) => {
  const org = await insertOrg(db, owner!.user.id);
  const { key } = await mintKey(app, owner!, 'organization', org.id, 'admin');
  await db.query('DELETE FROM orgs WHERE id = $1', [org.id]);
  t.equal((await call(app, 'GET', '/v1/api-keys/target/user/me', { as: keyAuth(key) })).status, 401);
});
