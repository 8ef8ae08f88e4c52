import t from 'tap';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { createBlob, createOrg, createRevision } from './helpers/resources.ts';

const { app } = await buildTestApp(t);
const owner = await signInAnonymous(app);
const stranger = await signInAnonymous(app);
const org = await createOrg(app, owner, { visibility: 'public' });

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

t.test('Create Revision numbers one past the highest', async (t) => {
  const { blob } = await createBlob(app, owner, org.id);
  const { status, body } = await call(app, 'POST', `/v1/blobs/${org.alias}/${blob.alias}/revisions`, {
    as: owner,
    body: {},
  });
  t.equal(status, 201);
  t.same(Object.keys(body).sort(), ['revision', 'status']);
  t.match(body.revision, { id: /^[0-9a-f-]{36}$/, blob_id: blob.id, number: 2, status: 'ready', created_at: ISO });
  t.same(Object.keys(body.revision).sort(), ['blob_id', 'created_at', 'id', 'number', 'status']);
  const noBody = await app.inject({
    method: 'POST',
    url: `/v1/blobs/${org.id}/${blob.id}/revisions`,
    headers: owner.headers,
  });
  t.equal(noBody.statusCode, 201, 'the body is optional');
  t.equal(noBody.json().revision.number, 3);
});

t.test('Get Revision adds held; Delete Revision removes it', async (t) => {
  const { blob, revision } = await createBlob(app, owner, org.id);
  const got = await call(app, 'GET', `/v1/revisions/${revision.id}`, { as: owner });
  t.equal(got.status, 200);
  t.same(got.body, {
    status: 'success',
    revision: {
      ...revision,
      held: {
        'workflow.definitions_per_revision': 0,
        'workflow.playgrounds_per_revision': 0,
        'workflow.sessions_per_revision': 0,
      },
    },
  });
  const second = await createRevision(app, owner, org.id, blob.id);
  const deleted = await call(app, 'DELETE', `/v1/revisions/${second.id}`, { as: owner });
  t.equal(deleted.status, 200);
  t.same(deleted.body, { status: 'success', revision: second });
  t.equal((await call(app, 'GET', `/v1/revisions/${second.id}`, { as: owner })).status, 404);
  t.equal((await call(app, 'DELETE', `/v1/revisions/${second.id}`, { as: owner })).status, 404);
});

t.test('revision ids that are not canonical UUIDs are 404', async (t) => {
  const { revision } = await createBlob(app, owner, org.id);
  for (const ref of [revision.id.toUpperCase(), 'latest', '1', `${revision.id}x`]) {
    const { status, body } = await call(app, 'GET', `/v1/revisions/${ref}`, { as: owner });
    t.equal(status, 404, ref);
    t.equal(body.error, 'not_found');
  }
});

t.test("a stranger: 404 on a private blob's revisions, read-only on a public blob", async (t) => {
  const priv = await createBlob(app, owner, org.id);
  const pub = await createBlob(app, owner, org.id, { visibility: 'public' });
  for (const [method, url] of [
    ['GET', `/v1/revisions/${priv.revision.id}`],
    ['DELETE', `/v1/revisions/${priv.revision.id}`],
    ['GET', `/v1/blobs/${org.id}/${priv.blob.id}/revisions`],
    ['POST', `/v1/blobs/${org.id}/${priv.blob.id}/revisions`],
  ] as const) {
    const res = await call(app, method, url, { as: stranger, ...(method === 'POST' ? { body: {} } : {}) });
    t.equal(res.status, 404, `${method} ${url}`);
    t.equal(res.body.error, 'not_found');
  }
  t.equal((await call(app, 'GET', `/v1/revisions/${pub.revision.id}`, { as: stranger })).status, 200);
  const list = await call(app, 'GET', `/v1/blobs/${org.id}/${pub.blob.id}/revisions`, { as: stranger });
  t.equal(list.status, 200);
  t.same(list.body, { status: 'success', revisions: [pub.revision], cursor: null });
  for (const [method, url] of [
    ['DELETE', `/v1/revisions/${pub.revision.id}`],
    ['POST', `/v1/blobs/${org.id}/${pub.blob.id}/revisions`],
  ] as const) {
    const res = await call(app, method, url, { as: stranger, ...(method === 'POST' ? { body: {} } : {}) });
    t.equal(res.status, 403, `${method} ${url}`);
    t.equal(res.body.error, 'forbidden');
  }
});

t.test('a scheduler blob has exactly one revision', async (t) => {
  const { blob, revision } = await createBlob(app, owner, org.id, { type: 'svc.compute.scheduler' });
  t.equal(revision.number, 1);
  const second = await call(app, 'POST', `/v1/blobs/${org.id}/${blob.id}/revisions`, { as: owner, body: {} });
  t.equal(second.status, 409);
  t.match(second.body, { status: 'failure', error: 'conflict', message: String });
  const list = await call(app, 'GET', `/v1/blobs/${org.id}/${blob.id}/revisions`, { as: owner });
  t.same(list.body.revisions, [revision], 'still one');
});

t.test('concurrent creations get distinct numbers', async (t) => {
  const { blob } = await createBlob(app, owner, org.id);
  const results = await Promise.all(
    Array.from({ length: 12 }, () =>
      call(app, 'POST', `/v1/blobs/${org.id}/${blob.id}/revisions`, { as: owner, body: {} }),
    ),
  );
  t.same(
    results.map((r) => r.status),
    Array(12).fill(201),
  );
  const numbers = results.map((r) => r.body.revision.number).sort((a, b) => a - b);
  t.same(
    numbers,
    Array.from({ length: 12 }, (_, i) => i + 2),
  );
});

t.test('List Revisions pages to a null cursor', async (t) => {
  const { blob } = await createBlob(app, owner, org.id);
  for (let i = 0; i < 6; i++) await createRevision(app, owner, org.id, blob.id);
  const base = `/v1/blobs/${org.id}/${blob.id}/revisions`;

  const all = await call(app, 'GET', base, { as: owner });
  t.equal(all.status, 200);
  t.same(Object.keys(all.body).sort(), ['cursor', 'revisions', 'status']);
  t.same(
    all.body.revisions.map((r: { number: number }) => r.number),
    [1, 2, 3, 4, 5, 6, 7],
    'default limit 50 covers all',
  );
  t.equal(all.body.cursor, null);

  const seen: number[][] = [];
  let cursor: string | null | undefined;
  let pages = 0;
  do {
    const url = `${base}?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page = await call(app, 'GET', url, { as: owner });
    t.equal(page.status, 200);
    seen.push(page.body.revisions.map((r: { number: number }) => r.number));
    cursor = page.body.cursor;
    t.ok(cursor === null || typeof cursor === 'string');
    pages++;
  } while (cursor !== null && pages < 10);
  t.same(seen, [[1, 2, 3], [4, 5, 6], [7]]);

  // Exactly filled pages: the page that empties the listing already says so.
  const two = await call(app, 'GET', `${base}?limit=7`, { as: owner });
  t.equal(two.body.revisions.length, 7);
  t.equal(two.body.cursor, null);
  const first = await call(app, 'GET', `${base}?limit=6`, { as: owner });
  t.type(first.body.cursor, 'string');
  const rest = await call(app, 'GET', `${base}?limit=6&cursor=${first.body.cursor}`, { as: owner });
  t.same(
    rest.body.revisions.map((r: { number: number }) => r.number),
    [7],
  );
  t.equal(rest.body.cursor, null);
});

t.test('a cursor resumes after its position even if that revision was deleted', async (t) => {
  const { blob } = await createBlob(app, owner, org.id);
  const second = await createRevision(app, owner, org.id, blob.id);
  await createRevision(app, owner, org.id, blob.id);
  const base = `/v1/blobs/${org.id}/${blob.id}/revisions`;
  const first = await call(app, 'GET', `${base}?limit=2`, { as: owner });
  t.equal((await call(app, 'DELETE', `/v1/revisions/${second.id}`, { as: owner })).status, 200);
  const next = await call(app, 'GET', `${base}?limit=2&cursor=${first.body.cursor}`, { as: owner });
  t.equal(next.status, 200);
  t.same(
    next.body.revisions.map((r: { number: number }) => r.number),
    [3],
  );
});

t.test('limit outside 1..200 or not an integer is invalid_limit', async (t) => {
  const { blob } = await createBlob(app, owner, org.id);
  const base = `/v1/blobs/${org.id}/${blob.id}/revisions`;
  for (const limit of ['0', '201', '-1', '1.5', 'abc', '', '1e2']) {
    const { status, body } = await call(app, 'GET', `${base}?limit=${limit}`, { as: owner });
    t.equal(status, 400, `limit=${limit}`);
    t.equal(body.error, 'invalid_limit', `limit=${limit}`);
  }
  for (const limit of ['1', '200']) {
    t.equal((await call(app, 'GET', `${base}?limit=${limit}`, { as: owner })).status, 200, `limit=${limit}`);
  }
  const unknown = await call(app, 'GET', `${base}?page=2`, { as: owner });
  t.equal(unknown.status, 400, 'unknown query parameters are refused');
  t.equal(unknown.body.error, 'invalid_request_body');
});

t.test('a tampered, forged or transplanted cursor is invalid_cursor', async (t) => {
  const a = await createBlob(app, owner, org.id);
  const b = await createBlob(app, owner, org.id);
  await createRevision(app, owner, org.id, a.blob.id);
  await createRevision(app, owner, org.id, b.blob.id);
  const urlA = `/v1/blobs/${org.id}/${a.blob.id}/revisions`;
  const urlB = `/v1/blobs/${org.id}/${b.blob.id}/revisions`;
  const cursor: string = (await call(app, 'GET', `${urlA}?limit=1`, { as: owner })).body.cursor;
  t.type(cursor, 'string');
  t.equal(
    (await call(app, 'GET', `${urlA}?limit=1&cursor=${cursor}`, { as: owner })).status,
    200,
    'genuine cursor works',
  );

  const flipped = cursor.slice(0, 2) + (cursor[2] === 'A' ? 'B' : 'A') + cursor.slice(3);
  const forged = `${Buffer.from('0').toString('base64url')}.${cursor.split('.')[1]}`;
  for (const [what, value, url] of [
    ['tampered', flipped, urlA],
    ['forged', forged, urlA],
    ['empty', '', urlA],
    ['garbage', 'not-a-cursor', urlA],
    ['transplanted to another blob', cursor, urlB],
  ] as const) {
    const { status, body } = await call(app, 'GET', `${url}?cursor=${encodeURIComponent(value)}`, { as: owner });
    t.equal(status, 400, what);
    t.equal(body.error, 'invalid_cursor', what);
  }
});

t.test('copy_from copies a revision of the same blob', async (t) => {
  const { blob, revision } = await createBlob(app, owner, org.id);
  t.equal(
    (
      await call(app, 'PUT', `/v1/revisions/${revision.id}/metadata/notes`, {
        as: owner,
        body: { entries: [{ a: 1 }, 'two'] },
      })
    ).status,
    200,
  );
  const copy = await call(app, 'POST', `/v1/blobs/${org.id}/${blob.id}/revisions`, {
    as: owner,
    body: { copy_from: revision.id },
  });
  t.equal(copy.status, 201);
  t.equal(copy.body.revision.number, 2);
  const copied = await call(app, 'GET', `/v1/revisions/${copy.body.revision.id}/metadata/notes`, { as: owner });
  t.equal(copied.status, 200);
  t.same(copied.body.entries, [{ a: 1 }, 'two']);

  const other = await createBlob(app, owner, org.id);
  for (const copyFrom of [other.revision.id, revision.id.toUpperCase(), 'nope']) {
    const res = await call(app, 'POST', `/v1/blobs/${org.id}/${blob.id}/revisions`, {
      as: owner,
      body: { copy_from: copyFrom },
    });
    t.equal(res.status, 404, copyFrom);
    t.equal(res.body.error, 'not_found');
  }
  const nul = await call(app, 'POST', `/v1/blobs/${org.id}/${blob.id}/revisions`, {
    as: owner,
    body: { copy_from: null },
  });
  t.equal(nul.status, 400);
  t.equal(nul.body.error, 'invalid_request_body');
  const list = await call(app, 'GET', `/v1/blobs/${org.id}/${blob.id}/revisions`, { as: owner });
  t.equal(list.body.revisions.length, 2, 'refused copies created nothing');
});
