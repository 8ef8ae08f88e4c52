import t from 'tap';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { createBlob, createOrg, createRevision, uniqueAlias } from './helpers/resources.ts';

const { app, db } = await buildTestApp(t);
const owner = await signInAnonymous(app);
const stranger = await signInAnonymous(app);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('Create Organization answers 201 with the org record', async (t) => {
  const alias = uniqueAlias('acme');
  const { status, body } = await call(app, 'POST', '/v1/orgs', { as: owner, body: { alias, name: 'Acme' } });
  t.equal(status, 201);
  t.same(Object.keys(body).sort(), ['org', 'status']);
  t.equal(body.status, 'success');
  t.match(body.org, {
    id: /^[0-9a-f-]{36}$/,
    alias,
    name: 'Acme',
    visibility: 'private',
    owner_id: owner.user.id,
    created_at: ISO,
  });
  t.same(Object.keys(body.org).sort(), ['alias', 'created_at', 'id', 'name', 'owner_id', 'visibility']);
});

t.test('name and visibility are optional; visibility must be private or public', async (t) => {
  const org = await createOrg(app, owner, { visibility: 'public' });
  t.equal(org.name, '');
  t.equal(org.visibility, 'public');
  const bad = await call(app, 'POST', '/v1/orgs', {
    as: owner,
    body: { alias: uniqueAlias('o'), visibility: 'secret' },
  });
  t.equal(bad.status, 400);
  t.equal(bad.body.error, 'invalid_request_body');
  const extra = await call(app, 'POST', '/v1/orgs', {
    as: owner,
    body: { alias: uniqueAlias('o'), owner_id: stranger.user.id },
  });
  t.equal(extra.status, 400, 'unknown fields are refused');
  t.equal(extra.body.error, 'invalid_request_body');
});

t.test('no credential is 401', async (t) => {
  const { status, body } = await call(app, 'POST', '/v1/orgs', { body: { alias: uniqueAlias('o') } });
  t.equal(status, 401);
  t.equal(body.error, 'unauthorized');
});

t.test('alias rules at create', async (t) => {
  for (const alias of ['0b6b1d6e-1f9e-4b7a-8c59-1c2d3e4f5a6b', 'me', 'ab', 'Upper', '-lead', 'a'.repeat(65)]) {
    const { status, body } = await call(app, 'POST', '/v1/orgs', { as: owner, body: { alias } });
    t.equal(status, 400, alias);
    t.equal(body.error, 'invalid_request_body', alias);
  }
  const taken = await createOrg(app, owner);
  const again = await call(app, 'POST', '/v1/orgs', { as: stranger, body: { alias: taken.alias } });
  t.equal(again.status, 409);
  t.match(again.body, { status: 'failure', error: 'alias_taken', message: String });
});

t.test('Get Organization by id or alias; an upper-case UUID is an alias', async (t) => {
  const org = await createOrg(app, owner);
  for (const ref of [org.id, org.alias]) {
    const { status, body } = await call(app, 'GET', `/v1/orgs/${ref}`, { as: owner });
    t.equal(status, 200);
    t.same(body, { status: 'success', org });
  }
  const upper = await call(app, 'GET', `/v1/orgs/${org.id.toUpperCase()}`, { as: owner });
  t.equal(upper.status, 404);
  t.equal(upper.body.error, 'not_found');
  const missing = await call(app, 'GET', '/v1/orgs/no-such-org', { as: owner });
  t.equal(missing.status, 404);
});

t.test('a stranger gets 404 on a private org and read-only access to a public one', async (t) => {
  const priv = await createOrg(app, owner);
  const pub = await createOrg(app, owner, { visibility: 'public' });
  for (const [method, body] of [
    ['GET', undefined],
    ['PATCH', { name: 'x' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await call(app, method, `/v1/orgs/${priv.id}`, { as: stranger, ...(body ? { body } : {}) });
    t.equal(res.status, 404, `${method} private`);
    t.equal(res.body.error, 'not_found');
  }
  const read = await call(app, 'GET', `/v1/orgs/${pub.alias}`, { as: stranger });
  t.equal(read.status, 200);
  t.equal(read.body.org.id, pub.id);
  for (const [method, body] of [
    ['PATCH', { name: 'x' }],
    ['PATCH', { visibility: 'private' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await call(app, method, `/v1/orgs/${pub.id}`, { as: stranger, ...(body ? { body } : {}) });
    t.equal(res.status, 403, `${method} ${JSON.stringify(body)} public`);
    t.equal(res.body.error, 'forbidden');
  }
  const after = await call(app, 'GET', `/v1/orgs/${pub.id}`, { as: owner });
  t.same(after.body.org, pub, 'nothing changed');
});

t.test('Update Organization: name, alias and visibility by the owner', async (t) => {
  const org = await createOrg(app, owner);
  const alias = uniqueAlias('renamed');
  const { status, body } = await call(app, 'PATCH', `/v1/orgs/${org.alias}`, {
    as: owner,
    body: { name: 'New name', alias, visibility: 'public' },
  });
  t.equal(status, 200);
  t.same(body, { status: 'success', org: { ...org, name: 'New name', alias, visibility: 'public' } });
  t.equal((await call(app, 'GET', `/v1/orgs/${org.alias}`, { as: owner })).status, 404, 'the old alias is free');
  t.equal((await call(app, 'GET', `/v1/orgs/${alias}`, { as: stranger })).status, 200, 'now public');
  const empty = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: owner, body: {} });
  t.equal(empty.status, 200);
  t.equal(empty.body.org.alias, alias, 'an empty patch changes nothing');
});

t.test('alias rules at rename', async (t) => {
  const org = await createOrg(app, owner);
  const other = await createOrg(app, owner);
  const uuidShaped = await call(app, 'PATCH', `/v1/orgs/${org.id}`, {
    as: owner,
    body: { alias: '0b6b1d6e-1f9e-4b7a-8c59-1c2d3e4f5a6b' },
  });
  t.equal(uuidShaped.status, 400);
  t.equal(uuidShaped.body.error, 'invalid_request_body');
  const taken = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: owner, body: { alias: other.alias } });
  t.equal(taken.status, 409);
  t.equal(taken.body.error, 'alias_taken');
  const same = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: owner, body: { alias: org.alias } });
  t.equal(same.status, 200, 'keeping its own alias is not a conflict');
});

t.test('ownership transfer: the new owner can delete, the old one cannot', async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  const org = await createOrg(app, alice);
  const moved = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: alice, body: { owner_id: bob.user.id } });
  t.equal(moved.status, 200);
  t.equal(moved.body.org.owner_id, bob.user.id);
  const oldOwner = await call(app, 'DELETE', `/v1/orgs/${org.id}`, { as: alice });
  t.equal(oldOwner.status, 404, 'the old owner no longer sees a private org');
  const deleted = await call(app, 'DELETE', `/v1/orgs/${org.id}`, { as: bob });
  t.equal(deleted.status, 200);
  t.same(deleted.body, { status: 'success', org: moved.body.org });
  t.equal((await call(app, 'GET', `/v1/orgs/${org.id}`, { as: bob })).status, 404);
});

t.test('ownership transfer of a public org: the old owner gets 403', async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  const org = await createOrg(app, alice, { visibility: 'public' });
  t.equal(
    (await call(app, 'PATCH', `/v1/orgs/${org.alias}`, { as: alice, body: { owner_id: bob.user.id } })).status,
    200,
  );
  const back = await call(app, 'PATCH', `/v1/orgs/${org.alias}`, { as: alice, body: { owner_id: alice.user.id } });
  t.equal(back.status, 403, 'only the owner transfers');
  t.equal(back.body.error, 'forbidden');
  const del = await call(app, 'DELETE', `/v1/orgs/${org.alias}`, { as: alice });
  t.equal(del.status, 403);
  t.equal(del.body.error, 'forbidden');
  const meTransfer = await call(app, 'PATCH', `/v1/orgs/${org.alias}`, { as: bob, body: { owner_id: 'me' } });
  t.equal(meTransfer.status, 200, '`me` names the caller (a no-op for the owner)');
  t.equal(meTransfer.body.org.owner_id, bob.user.id);
});

t.test('ownership transfer targets: by alias; unknown user 404; service account refused', async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  const bobAlias = uniqueAlias('bob');
  await db.query('UPDATE users SET alias = $2 WHERE id = $1', [bob.user.id, bobAlias]);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (kind, owner_id, name) VALUES ('service', $1, 'bot') RETURNING id`,
    [alice.user.id],
  );
  const org = await createOrg(app, alice);
  const unknown = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: alice, body: { owner_id: 'nobody-here' } });
  t.equal(unknown.status, 404);
  t.equal(unknown.body.error, 'not_found');
  const service = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: alice, body: { owner_id: rows[0]!.id } });
  t.equal(service.status, 400);
  t.equal(service.body.error, 'invalid_request_body');
  t.equal(
    (await call(app, 'GET', `/v1/orgs/${org.id}`, { as: alice })).body.org.owner_id,
    alice.user.id,
    'refusals change nothing',
  );
  const byAlias = await call(app, 'PATCH', `/v1/orgs/${org.id}`, {
    as: alice,
    body: { owner_id: bobAlias, name: 'handed over' },
  });
  t.equal(byAlias.status, 200);
  t.match(byAlias.body.org, { owner_id: bob.user.id, name: 'handed over' });
});

t.test('Delete Organization removes its blobs, revisions and metadata', async (t) => {
  const org = await createOrg(app, owner);
  const { blob, revision } = await createBlob(app, owner, org.id);
  const second = await createRevision(app, owner, org.id, blob.id);
  t.equal(
    (await call(app, 'PUT', `/v1/blobs/${org.id}/${blob.id}/metadata/notes`, { as: owner, body: { entries: [1] } }))
      .status,
    200,
  );
  t.equal(
    (await call(app, 'PUT', `/v1/revisions/${second.id}/metadata/notes`, { as: owner, body: { entries: [2] } })).status,
    200,
  );
  const { status, body } = await call(app, 'DELETE', `/v1/orgs/${org.alias}`, { as: owner });
  t.equal(status, 200);
  t.equal(body.org.id, org.id);
  t.equal((await call(app, 'GET', `/v1/blobs/${org.id}/${blob.id}`, { as: owner })).status, 404);
  t.equal((await call(app, 'GET', `/v1/revisions/${revision.id}`, { as: owner })).status, 404);
  const counts = await db.query<{ blobs: number; revisions: number; bm: number; rm: number }>(
    `SELECT (SELECT count(*) FROM blobs WHERE org_id = $1)::int AS blobs,
            (SELECT count(*) FROM revisions WHERE blob_id = $2)::int AS revisions,
            (SELECT count(*) FROM blob_metadata WHERE blob_id = $2)::int AS bm,
            (SELECT count(*) FROM revision_metadata WHERE revision_id = $3)::int AS rm`,
    [org.id, blob.id, second.id],
  );
  t.same(counts.rows[0], { blobs: 0, revisions: 0, bm: 0, rm: 0 });
});

t.test('List Organization Blobs: only what the caller may read', async (t) => {
  const org = await createOrg(app, owner, { visibility: 'public' });
  const priv = await createBlob(app, owner, org.id, { visibility: 'private' });
  const pub = await createBlob(app, owner, org.id, { visibility: 'public', type: 'svc.compute.scheduler' });
  const mine = await call(app, 'GET', `/v1/orgs/${org.id}/blobs`, { as: owner });
  t.equal(mine.status, 200);
  t.same(Object.keys(mine.body).sort(), ['blobs', 'status']);
  t.same(mine.body.blobs, [priv.blob, pub.blob], 'the owner sees every blob, oldest first');
  const theirs = await call(app, 'GET', `/v1/orgs/${org.alias}/blobs`, { as: stranger });
  t.equal(theirs.status, 200);
  t.same(theirs.body.blobs, [pub.blob], 'a stranger sees only the public blob');
  const privateOrg = await createOrg(app, owner);
  await createBlob(app, owner, privateOrg.id, { visibility: 'public' });
  const hidden = await call(app, 'GET', `/v1/orgs/${privateOrg.id}/blobs`, { as: stranger });
  t.equal(hidden.status, 404, 'a private org is not listed to a stranger, whatever its blobs');
  t.equal(hidden.body.error, 'not_found');
  const empty = await call(app, 'GET', `/v1/orgs/${(await createOrg(app, owner)).id}/blobs`, { as: owner });
  t.same(empty.body, { status: 'success', blobs: [] });
});

t.test(
  'organization members: write renames, admin re-aliases and re-publishes, only the owner deletes or transfers',
  async (t) => {
    const boss = await signInAnonymous(app);
    const writer = await signInAnonymous(app);
    const admin = await signInAnonymous(app);
    const org = await createOrg(app, boss);
    await db.query(`INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, 'write'), ($1, $3, 'admin')`, [
      org.id,
      writer.user.id,
      admin.user.id,
    ]);
    const url = `/v1/orgs/${org.id}`;

    t.equal((await call(app, 'PATCH', url, { as: writer, body: { name: 'by writer' } })).status, 200);
    t.equal(
      (await call(app, 'PATCH', url, { as: writer, body: { visibility: 'private', alias: org.alias } })).status,
      200,
      'unchanged values need only write',
    );
    for (const body of [{ alias: uniqueAlias('w') }, { visibility: 'public' }]) {
      const res = await call(app, 'PATCH', url, { as: writer, body });
      t.equal(res.status, 403, JSON.stringify(body));
      t.equal(res.body.error, 'forbidden');
    }
    const alias = uniqueAlias('by-admin');
    const byAdmin = await call(app, 'PATCH', url, { as: admin, body: { alias, visibility: 'public' } });
    t.equal(byAdmin.status, 200);
    t.match(byAdmin.body.org, { alias, visibility: 'public', name: 'by writer' });
    for (const [who, as] of [
      ['writer', writer],
      ['admin', admin],
    ] as const) {
      const transfer = await call(app, 'PATCH', url, { as, body: { owner_id: as.user.id } });
      t.equal(transfer.status, 403, `${who} cannot take ownership`);
      t.equal(transfer.body.error, 'forbidden');
      const del = await call(app, 'DELETE', url, { as });
      t.equal(del.status, 403, `${who} cannot delete`);
      t.equal(del.body.error, 'forbidden');
    }
    const listed = await call(app, 'GET', `/v1/orgs/${org.id}/blobs`, { as: writer });
    t.equal(listed.status, 200);
    const { blob } = await createBlob(app, writer, org.id);
    t.same(
      (await call(app, 'GET', `/v1/orgs/${org.id}/blobs`, { as: writer })).body.blobs.map((b: { id: string }) => b.id),
      [blob.id],
      'an org member reads every blob in it',
    );
  },
);

t.test('API keys: an organization key is confined and capped', async (t) => {
  const boss = await signInAnonymous(app);
  const org = await createOrg(app, boss);
  const other = await createOrg(app, boss);
  const mint = async (role: string) => {
    const res = await call(app, 'POST', '/v1/api-keys', {
      as: boss,
      body: { target: 'organization', target_id: org.id, role },
    });
    if (res.status !== 201) throw new Error(`mint failed: ${res.status} ${JSON.stringify(res.body)}`);
    return { 'x-api-key': res.body.api_key.key as string };
  };
  const read = await mint('read');
  const adminKey = await mint('admin');
  t.equal((await call(app, 'GET', `/v1/orgs/${org.id}`, { headers: read })).status, 200);
  const rename = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { headers: read, body: { name: 'x' } });
  t.equal(rename.status, 403, "a read key cannot write, even the owner's");
  t.equal(rename.body.error, 'forbidden');
  t.equal((await call(app, 'DELETE', `/v1/orgs/${org.id}`, { headers: read })).status, 403, 'nor delete');
  t.equal(
    (await call(app, 'GET', `/v1/orgs/${other.id}`, { headers: adminKey })).status,
    404,
    'another organization does not exist for it',
  );
  const create = await call(app, 'POST', '/v1/orgs', { headers: adminKey, body: { alias: uniqueAlias('k') } });
  t.equal(create.status, 403, 'a confined key cannot create organizations');
  t.equal(create.body.error, 'forbidden');
  t.equal(
    (await call(app, 'PATCH', `/v1/orgs/${org.id}`, { headers: adminKey, body: { name: 'by key' } })).status,
    200,
  );
});

t.test('a service account using its own key may not change visibility, but may do the rest', async (t) => {
  const boss = await signInAnonymous(app);
  const org = await createOrg(app, boss);
  const created = await call(app, 'POST', '/v1/users', { as: boss, body: { name: 'bot' } });
  if (created.status >= 300) throw new Error(`service account creation failed: ${JSON.stringify(created.body)}`);
  const bot = created.body.user;
  await db.query(`INSERT INTO memberships (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [org.id, bot.id]);
  const minted = await call(app, 'POST', '/v1/api-keys', {
    as: boss,
    body: { target: 'user', target_id: bot.id, role: 'admin' },
  });
  t.equal(minted.status, 201);
  const headers = { 'x-api-key': minted.body.api_key.key as string };

  const publish = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { headers, body: { visibility: 'public' } });
  t.equal(publish.status, 403);
  t.equal(publish.body.error, 'forbidden');
  const same = await call(app, 'PATCH', `/v1/orgs/${org.id}`, {
    headers,
    body: { visibility: 'private', name: 'bot was here' },
  });
  t.equal(same.status, 200, 'an unchanged visibility passes');
  const { blob } = await createBlob(app, { headers }, org.id);
  const blobPublish = await call(app, 'PATCH', `/v1/blobs/${org.id}/${blob.id}`, {
    headers,
    body: { visibility: 'public' },
  });
  t.equal(blobPublish.status, 403);
  t.equal(blobPublish.body.error, 'forbidden');
  t.equal(
    (await call(app, 'PATCH', `/v1/blobs/${org.id}/${blob.id}`, { headers, body: { name: 'renamed' } })).status,
    200,
  );
  const byHuman = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: boss, body: { visibility: 'public' } });
  t.equal(byHuman.status, 200, 'a human with the same standing may');
});
