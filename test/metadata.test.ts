import t from 'tap';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { createBlob, createOrg } from './helpers/resources.ts';

const { app } = await buildTestApp(t);
const owner = await signInAnonymous(app);
const stranger = await signInAnonymous(app);
const org = await createOrg(app, owner, { visibility: 'public' });
const priv = await createBlob(app, owner, org.id);
const pub = await createBlob(app, owner, org.id, { visibility: 'public' });

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Both metadata homes: a blob and a revision, addressed the ways the routes accept. */
const homes = [
  { what: 'blob', of: (b: typeof priv) => `/v1/blobs/${org.alias}/${b.blob.alias}/metadata` },
  { what: 'revision', of: (b: typeof priv) => `/v1/revisions/${b.revision.id}/metadata` },
];

for (const { what, of } of homes) {
  t.test(`${what} metadata: PUT stores, GET reads, PUT replaces`, async (t) => {
    const base = of(priv);
    const entries = [{ label: 'x', score: 0.5 }, 'text', 3, null, [true, { nested: [] }]];
    const put = await call(app, 'PUT', `${base}/labels`, { as: owner, body: { entries } });
    t.equal(put.status, 200);
    t.match(put.body, { status: 'success', alias: 'labels', entries, updated_at: ISO });
    t.same(Object.keys(put.body).sort(), ['alias', 'entries', 'status', 'updated_at']);
    const got = await call(app, 'GET', `${base}/labels`, { as: owner });
    t.equal(got.status, 200);
    t.same(got.body, put.body);
    const replaced = await call(app, 'PUT', `${base}/labels`, { as: owner, body: { entries: [] } });
    t.equal(replaced.status, 200);
    t.same(
      (await call(app, 'GET', `${base}/labels`, { as: owner })).body.entries,
      [],
      'an empty list is stored, not deleted',
    );
    const none = await call(app, 'GET', `${base}/other`, { as: owner });
    t.equal(none.status, 404, 'an alias with no listing');
    t.equal(none.body.error, 'not_found');
  });

  t.test(`${what} metadata: alias grammar on PUT only`, async (t) => {
    const base = of(priv);
    for (const alias of ['0b6b1d6e-1f9e-4b7a-8c59-1c2d3e4f5a6b', 'UPPER', 'me', 'ab']) {
      const res = await call(app, 'PUT', `${base}/${alias}`, { as: owner, body: { entries: [1] } });
      t.equal(res.status, 400, alias);
      t.equal(res.body.error, 'invalid_request_body', alias);
    }
    const read = await call(app, 'GET', `${base}/UPPER`, { as: owner });
    t.equal(read.status, 404, 'reads never apply the grammar; nothing is stored there');
  });

  t.test(`${what} metadata: body shape`, async (t) => {
    const base = of(priv);
    let deep: unknown = 1;
    for (let i = 0; i < 100; i++) deep = [deep];
    for (const body of [{}, { entries: 'x' }, { entries: null }, { entries: [], extra: 1 }, { entries: [deep] }]) {
      const res = await call(app, 'PUT', `${base}/shape`, { as: owner, body });
      t.equal(res.status, 400, JSON.stringify(body).slice(0, 40));
      t.equal(res.body.error, 'invalid_request_body');
    }
  });

  t.test(`${what} metadata: a stranger gets 404 on private, read-only on public`, async (t) => {
    t.equal((await call(app, 'PUT', `${of(pub)}/shared`, { as: owner, body: { entries: ['hi'] } })).status, 200);
    t.equal((await call(app, 'PUT', `${of(priv)}/shared`, { as: owner, body: { entries: ['hi'] } })).status, 200);
    for (const [method, body] of [
      ['GET', undefined],
      ['PUT', { entries: [] }],
    ] as const) {
      const res = await call(app, method, `${of(priv)}/shared`, { as: stranger, ...(body ? { body } : {}) });
      t.equal(res.status, 404, `${method} private`);
      t.equal(res.body.error, 'not_found');
    }
    const read = await call(app, 'GET', `${of(pub)}/shared`, { as: stranger });
    t.equal(read.status, 200);
    t.same(read.body.entries, ['hi']);
    const write = await call(app, 'PUT', `${of(pub)}/shared`, { as: stranger, body: { entries: [] } });
    t.equal(write.status, 403);
    t.equal(write.body.error, 'forbidden');
  });
}

t.test('blob and revision listings are separate', async (t) => {
  const b = await createBlob(app, owner, org.id);
  t.equal(
    (
      await call(app, 'PUT', `/v1/blobs/${org.id}/${b.blob.id}/metadata/tags`, {
        as: owner,
        body: { entries: ['blob'] },
      })
    ).status,
    200,
  );
  const rev = await call(app, 'GET', `/v1/revisions/${b.revision.id}/metadata/tags`, { as: owner });
  t.equal(rev.status, 404);
  t.equal(
    (
      await call(app, 'PUT', `/v1/revisions/${b.revision.id}/metadata/tags`, {
        as: owner,
        body: { entries: ['revision'] },
      })
    ).status,
    200,
  );
  t.same((await call(app, 'GET', `/v1/blobs/${org.id}/${b.blob.id}/metadata/tags`, { as: owner })).body.entries, [
    'blob',
  ]);
  t.same((await call(app, 'GET', `/v1/revisions/${b.revision.id}/metadata/tags`, { as: owner })).body.entries, [
    'revision',
  ]);
});

t.test('metadata of a missing blob or revision is 404', async (t) => {
  const put = await call(app, 'PUT', `/v1/blobs/${org.id}/no-such-blob/metadata/tags`, {
    as: owner,
    body: { entries: [] },
  });
  t.equal(put.status, 404);
  const get = await call(app, 'GET', '/v1/revisions/00000000-0000-4000-8000-000000000000/metadata/tags', { as: owner });
  t.equal(get.status, 404);
  t.equal(get.body.error, 'not_found');
});
