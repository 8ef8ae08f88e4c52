import t from 'tap';
import { BLOB_TYPE_NAMES } from '../shared/blob-types.ts';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { createBlob, createOrg, uniqueAlias } from './helpers/resources.ts';

const { app, db } = await buildTestApp(t);
const owner = await signInAnonymous(app);
const stranger = await signInAnonymous(app);
const org = await createOrg(app, owner, { visibility: 'public' });
const privateOrg = await createOrg(app, owner);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('Create Blob answers the blob and its first revision', async (t) => {
  const alias = uniqueAlias('flow');
  const { status, body } = await call(app, 'POST', `/v1/blobs/${org.alias}`, {
    as: owner,
    body: { type: 'svc.compute.workflow', alias, name: 'Flow' },
  });
  t.equal(status, 201);
  t.same(Object.keys(body).sort(), ['blob', 'revision', 'status']);
  t.equal(body.status, 'success');
  t.same(Object.keys(body.blob).sort(), [
    'alias',
    'created_at',
    'id',
    'name',
    'org_id',
    'status',
    'type',
    'visibility',
  ]);
  t.match(body.blob, {
    alias,
    org_id: org.id,
    type: 'svc.compute.workflow',
    name: 'Flow',
    visibility: 'private',
    status: 'ready',
    created_at: ISO,
  });
  t.same(Object.keys(body.revision).sort(), ['blob_id', 'created_at', 'id', 'number', 'status']);
  t.match(body.revision, { blob_id: body.blob.id, number: 1, status: 'ready', created_at: ISO });
  const { rows } = await db.query('SELECT number FROM revisions WHERE blob_id = $1', [body.blob.id]);
  t.same(rows, [{ number: 1 }], 'exactly one revision was stored');
});

t.test('every blob type string is accepted', async (t) => {
  for (const type of BLOB_TYPE_NAMES) {
    const { blob } = await createBlob(app, owner, org.id, { type });
    t.equal(blob.type, type);
  }
});

t.test('a type string that names no blob type is invalid_blob_type without a limit', async (t) => {
  for (const type of ['svc.compute.nothing', 'SVC.COMPUTE.WORKFLOW', '', 'workflow']) {
    const alias = uniqueAlias('typo');
    const { status, body } = await call(app, 'POST', `/v1/blobs/${org.id}`, { as: owner, body: { type, alias } });
    t.equal(status, 400, type);
    t.same(Object.keys(body).sort(), ['error', 'message', 'status'], 'no limit object');
    t.equal(body.error, 'invalid_blob_type');
    t.equal((await db.query('SELECT 1 FROM blobs WHERE alias = $1', [alias])).rowCount, 0, 'nothing created');
  }
  const missing = await call(app, 'POST', `/v1/blobs/${org.id}`, { as: owner, body: { alias: uniqueAlias('b') } });
  t.equal(missing.status, 400, 'type is required');
  t.equal(missing.body.error, 'invalid_request_body');
});

t.test('Create Blob needs write on the organization', async (t) => {
  const pub = await call(app, 'POST', `/v1/blobs/${org.id}`, {
    as: stranger,
    body: { type: 'svc.compute.workflow', alias: uniqueAlias('b') },
  });
  t.equal(pub.status, 403);
  t.equal(pub.body.error, 'forbidden');
  const priv = await call(app, 'POST', `/v1/blobs/${privateOrg.id}`, {
    as: stranger,
    body: { type: 'svc.compute.workflow', alias: uniqueAlias('b') },
  });
  t.equal(priv.status, 404);
  t.equal(priv.body.error, 'not_found');
  const none = await call(app, 'POST', '/v1/blobs/no-such-org', {
    as: owner,
    body: { type: 'svc.compute.workflow', alias: uniqueAlias('b') },
  });
  t.equal(none.status, 404);
});

t.test('alias rules for blobs', async (t) => {
  const uuidShaped = await call(app, 'POST', `/v1/blobs/${org.id}`, {
    as: owner,
    body: { type: 'svc.model.onnx', alias: '0b6b1d6e-1f9e-4b7a-8c59-1c2d3e4f5a6b' },
  });
  t.equal(uuidShaped.status, 400);
  t.equal(uuidShaped.body.error, 'invalid_request_body');
  const { blob } = await createBlob(app, owner, org.id);
  const elsewhere = await call(app, 'POST', `/v1/blobs/${privateOrg.id}`, {
    as: owner,
    body: { type: 'svc.model.onnx', alias: blob.alias },
  });
  t.equal(elsewhere.status, 409, 'blob aliases are global, not per organization');
  t.equal(elsewhere.body.error, 'alias_taken');
  const sameAsOrg = await createBlob(app, owner, org.id, { alias: privateOrg.alias });
  t.equal(sameAsOrg.blob.alias, privateOrg.alias, 'a blob may share an alias with an organization');
  const renameUuid = await call(app, 'PATCH', `/v1/blobs/${org.id}/${blob.id}`, {
    as: owner,
    body: { alias: 'abcdef01-2345-4678-89ab-cdef01234567' },
  });
  t.equal(renameUuid.status, 400);
  t.equal(renameUuid.body.error, 'invalid_request_body');
  const renameTaken = await call(app, 'PATCH', `/v1/blobs/${org.id}/${blob.id}`, {
    as: owner,
    body: { alias: sameAsOrg.blob.alias },
  });
  t.equal(renameTaken.status, 409);
  t.equal(renameTaken.body.error, 'alias_taken');
});

t.test('Get Blob by id or alias, within its organization only', async (t) => {
  const { blob } = await createBlob(app, owner, org.id);
  for (const [o, b] of [
    [org.id, blob.id],
    [org.alias, blob.alias],
    [org.id, blob.alias],
    [org.alias, blob.id],
  ]) {
    const { status, body } = await call(app, 'GET', `/v1/blobs/${o}/${b}`, { as: owner });
    t.equal(status, 200);
    t.same(body, { status: 'success', blob });
  }
  const wrongOrg = await call(app, 'GET', `/v1/blobs/${privateOrg.id}/${blob.id}`, { as: owner });
  t.equal(wrongOrg.status, 404, 'a blob is addressed through its own organization');
  const upper = await call(app, 'GET', `/v1/blobs/${org.id}/${blob.id.toUpperCase()}`, { as: owner });
  t.equal(upper.status, 404, 'an upper-case UUID is looked up as an alias');
});

t.test('a stranger: 404 on a private blob, read-only on a public one', async (t) => {
  const priv = (await createBlob(app, owner, org.id)).blob;
  const pub = (await createBlob(app, owner, org.id, { visibility: 'public' })).blob;
  for (const [method, body] of [
    ['GET', undefined],
    ['PATCH', { name: 'x' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await call(app, method, `/v1/blobs/${org.id}/${priv.id}`, { as: stranger, ...(body ? { body } : {}) });
    t.equal(res.status, 404, `${method} private blob`);
    t.equal(res.body.error, 'not_found');
  }
  t.equal((await call(app, 'GET', `/v1/blobs/${org.id}/${pub.id}`, { as: stranger })).status, 200);
  for (const [method, body] of [
    ['PATCH', { name: 'x' }],
    ['PATCH', { visibility: 'private' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await call(app, method, `/v1/blobs/${org.id}/${pub.id}`, { as: stranger, ...(body ? { body } : {}) });
    t.equal(res.status, 403, `${method} public blob`);
    t.equal(res.body.error, 'forbidden');
  }
  const inPrivateOrg = (await createBlob(app, owner, privateOrg.id, { visibility: 'public' })).blob;
  const res = await call(app, 'GET', `/v1/blobs/${privateOrg.id}/${inPrivateOrg.id}`, { as: stranger });
  t.equal(res.status, 200, 'a public blob is readable even when its organization is private');
});

t.test('Update Blob', async (t) => {
  const { blob } = await createBlob(app, owner, org.id);
  const alias = uniqueAlias('renamed');
  const { status, body } = await call(app, 'PATCH', `/v1/blobs/${org.alias}/${blob.alias}`, {
    as: owner,
    body: { name: 'Renamed', alias, visibility: 'public' },
  });
  t.equal(status, 200);
  t.same(body, { status: 'success', blob: { ...blob, name: 'Renamed', alias, visibility: 'public' } });
  const noType = await call(app, 'PATCH', `/v1/blobs/${org.id}/${blob.id}`, {
    as: owner,
    body: { type: 'svc.model.onnx' },
  });
  t.equal(noType.status, 400, 'the type cannot change');
  t.equal(noType.body.error, 'invalid_request_body');
});

t.test('Delete Blob removes it and its revisions', async (t) => {
  const { blob, revision } = await createBlob(app, owner, org.id);
  const { status, body } = await call(app, 'DELETE', `/v1/blobs/${org.id}/${blob.alias}`, { as: owner });
  t.equal(status, 200);
  t.same(body, { status: 'success', blob });
  t.equal((await call(app, 'GET', `/v1/blobs/${org.id}/${blob.id}`, { as: owner })).status, 404);
  t.equal((await call(app, 'GET', `/v1/revisions/${revision.id}`, { as: owner })).status, 404);
  t.equal((await db.query('SELECT 1 FROM revisions WHERE blob_id = $1', [blob.id])).rowCount, 0);
  const again = await call(app, 'DELETE', `/v1/blobs/${org.id}/${blob.id}`, { as: owner });
  t.equal(again.status, 404);
  const reuse = await createBlob(app, owner, org.id, { alias: blob.alias });
  t.equal(reuse.blob.alias, blob.alias, 'the alias is free again');
});

t.test('blob members: write edits content and names, admin re-aliases and deletes', async (t) => {
  const writer = await signInAnonymous(app);
  const admin = await signInAnonymous(app);
  const { blob } = await createBlob(app, owner, privateOrg.id);
  await db.query(`INSERT INTO memberships (blob_id, user_id, role) VALUES ($1, $2, 'write'), ($1, $3, 'admin')`, [
    blob.id,
    writer.user.id,
    admin.user.id,
  ]);
  const url = `/v1/blobs/${privateOrg.id}/${blob.id}`;
  t.equal((await call(app, 'GET', url, { as: writer })).status, 200, 'a blob member reads the blob');
  t.equal(
    (await call(app, 'GET', `/v1/orgs/${privateOrg.id}`, { as: writer })).status,
    404,
    'but not its private organization',
  );
  t.equal((await call(app, 'PATCH', url, { as: writer, body: { name: 'w' } })).status, 200);
  t.equal(
    (await call(app, 'POST', `${url}/revisions`, { as: writer, body: {} })).status,
    201,
    'write creates revisions',
  );
  for (const [method, body] of [
    ['PATCH', { alias: uniqueAlias('w') }],
    ['PATCH', { visibility: 'public' }],
    ['DELETE', undefined],
  ] as const) {
    const res = await call(app, method, url, { as: writer, ...(body ? { body } : {}) });
    t.equal(res.status, 403, `writer ${method} ${JSON.stringify(body)}`);
    t.equal(res.body.error, 'forbidden');
  }
  const create = await call(app, 'POST', `/v1/blobs/${privateOrg.id}`, {
    as: admin,
    body: { type: 'svc.model.onnx', alias: uniqueAlias('b') },
  });
  t.equal(create.status, 404, 'a blob membership gives nothing on the organization');
  const alias = uniqueAlias('adm');
  t.equal((await call(app, 'PATCH', url, { as: admin, body: { alias } })).status, 200);
  t.equal(
    (await call(app, 'DELETE', `/v1/blobs/${privateOrg.id}/${alias}`, { as: admin })).status,
    200,
    'admin deletes',
  );
});
