import t, { type Test } from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from '../helpers/app.ts';
import { createBlob, createOrg, createRevision, uniqueAlias } from '../helpers/resources.ts';

// Every caller here signs in with the catalog defaults (no roomy fixture overrides): the quotas
// under test are the real ones, changed only by the overrides each test sets.
const { app, db } = await buildTestApp(t);

const fresh = (): Promise<Caller> => signInAnonymous(app, { defaultLimits: true });

function postOrg(as: Caller) {
  return call(app, 'POST', '/v1/orgs', { as, body: { alias: uniqueAlias('org') } });
}
function postBlob(as: Caller, orgId: string, type = 'svc.compute.workflow') {
  return call(app, 'POST', `/v1/blobs/${orgId}`, { as, body: { type, alias: uniqueAlias('blob') } });
}
function postRevision(as: Caller, orgId: string, blobId: string) {
  return call(app, 'POST', `/v1/blobs/${orgId}/${blobId}/revisions`, { as, body: {} });
}

async function count(sql: string, id: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql, [id]);
  return rows[0]!.n;
}
const orgsOf = (userId: string) => count('SELECT count(*)::int AS n FROM orgs WHERE owner_id = $1::uuid', userId);
const blobsOf = (orgId: string) => count('SELECT count(*)::int AS n FROM blobs WHERE org_id = $1::uuid', orgId);
const revisionsOf = (blobId: string) =>
  count('SELECT count(*)::int AS n FROM revisions WHERE blob_id = $1::uuid', blobId);

/** Asserts a `limit_exceeded` refusal with exactly this limit object. */
function refusedWith(
  t: Test,
  res: { status: number; body: any },
  limit: Record<string, unknown>,
  what = 'refused',
): void {
  t.equal(res.status, 400, what);
  t.equal(res.body.status, 'failure', what);
  t.equal(res.body.error, 'limit_exceeded', what);
  t.same(res.body.limit, limit, what);
  t.type(res.body.message, 'string');
}

/** The value in force and its source for one limit, as a limits route shows it. */
async function entry(as: Caller, url: string, id: string): Promise<Record<string, unknown>> {
  const { status, body } = await call(app, 'GET', url, { as });
  if (status !== 200) throw new Error(`${url}: ${status} ${JSON.stringify(body)}`);
  const found = body.groups.flatMap((g: any) => g.limits).find((l: any) => l.id === id);
  return { value: found.value, source: found.source, ...(found.held !== undefined ? { held: found.held } : {}) };
}

t.test('platform.orgs_per_user: default 1, refused create takes no slot, delete frees', async (t) => {
  const user = await fresh();
  const first = await postOrg(user);
  t.equal(first.status, 201);
  refusedWith(t, await postOrg(user), { id: 'platform.orgs_per_user', value: 1, held: 1 });
  t.equal(await orgsOf(user.user.id), 1, 'the refused create took no slot');
  refusedWith(t, await postOrg(user), { id: 'platform.orgs_per_user', value: 1, held: 1 }, 'refused again, same held');

  t.equal((await call(app, 'DELETE', `/v1/orgs/${first.body.org.id}`, { as: user })).status, 200);
  t.equal((await postOrg(user)).status, 201, 'deleting the organization freed its slot');

  await setOverride(app, 'platform.orgs_per_user', 'user', user.user.id, 3);
  t.equal((await postOrg(user)).status, 201);
  t.equal((await postOrg(user)).status, 201);
  refusedWith(t, await postOrg(user), { id: 'platform.orgs_per_user', value: 3, held: 3 });

  await setOverride(app, 'platform.orgs_per_user', 'user', user.user.id, 0);
  refusedWith(
    t,
    await postOrg(user),
    { id: 'platform.orgs_per_user', value: 0, held: 3 },
    'lowered below what is held: nothing more, nothing removed',
  );
  t.equal(await orgsOf(user.user.id), 3);
});

t.test('platform.blobs_per_org: default 3; a failed blob keeps its slot; delete frees', async (t) => {
  const user = await fresh();
  const org = await createOrg(app, user);
  const blobs = [];
  for (let i = 0; i < 3; i++) blobs.push((await createBlob(app, user, org.id)).blob);
  refusedWith(t, await postBlob(user, org.id), { id: 'platform.blobs_per_org', value: 3, held: 3 });
  t.equal(await blobsOf(org.id), 3, 'the refused create took no slot');

  await db.query(`UPDATE blobs SET status = 'failed' WHERE id = $1::uuid`, [blobs[0]!.id]);
  refusedWith(
    t,
    await postBlob(user, org.id),
    { id: 'platform.blobs_per_org', value: 3, held: 3 },
    'a failed blob still holds its slot',
  );

  t.equal((await call(app, 'DELETE', `/v1/blobs/${org.id}/${blobs[0]!.id}`, { as: user })).status, 200);
  t.equal((await postBlob(user, org.id)).status, 201, 'deleting the failed blob freed its slot');
  refusedWith(t, await postBlob(user, org.id), { id: 'platform.blobs_per_org', value: 3, held: 3 });

  await setOverride(app, 'platform.blobs_per_org', 'org', org.id, 4);
  t.equal((await postBlob(user, org.id)).status, 201);
  refusedWith(t, await postBlob(user, org.id), { id: 'platform.blobs_per_org', value: 4, held: 4 });
});

t.test('platform.revisions_per_blob: default 2, the first revision comes with the blob', async (t) => {
  const user = await fresh();
  const org = await createOrg(app, user);
  const { blob, revision } = await createBlob(app, user, org.id);
  t.equal(revision.number, 1);
  const second = await createRevision(app, user, org.id, blob.id);
  refusedWith(t, await postRevision(user, org.id, blob.id), { id: 'platform.revisions_per_blob', value: 2, held: 2 });
  t.equal(await revisionsOf(blob.id), 2, 'the refused create took no slot');

  await db.query(`UPDATE revisions SET status = 'failed' WHERE id = $1::uuid`, [second.id]);
  refusedWith(
    t,
    await postRevision(user, org.id, blob.id),
    { id: 'platform.revisions_per_blob', value: 2, held: 2 },
    'a failed revision still holds its slot',
  );

  t.equal((await call(app, 'DELETE', `/v1/revisions/${second.id}`, { as: user })).status, 200);
  const third = await postRevision(user, org.id, blob.id);
  t.equal(third.status, 201, 'deleting the failed revision freed its slot');
  refusedWith(t, await postRevision(user, org.id, blob.id), { id: 'platform.revisions_per_blob', value: 2, held: 2 });
});

t.test(
  'revisions_per_blob 1 or 0: Create Blob still makes revision 1 unchecked, Create Revision is refused',
  async (t) => {
    const user = await fresh();
    const org = await createOrg(app, user);
    for (const value of [1, 0]) {
      await setOverride(app, 'platform.revisions_per_blob', 'org', org.id, value);
      const created = await postBlob(user, org.id);
      t.equal(created.status, 201, `value ${value}`);
      t.equal(created.body.revision.number, 1);
      refusedWith(
        t,
        await postRevision(user, org.id, created.body.blob.id),
        { id: 'platform.revisions_per_blob', value, held: 1 },
        `value ${value}`,
      );
      t.equal(await revisionsOf(created.body.blob.id), 1);
    }
  },
);

t.test('an enabled entitlement gates creation: invalid_blob_type with the limit, no held', async (t) => {
  const user = await fresh();
  const org = await createOrg(app, user);
  for (const [type, id] of [
    ['svc.graph.graphdb', 'graphdb.enabled'],
    ['svc.dataset.nlp', 'nlp.enabled'],
  ] as const) {
    const refused = await postBlob(user, org.id, type);
    t.equal(refused.status, 400, type);
    t.equal(refused.body.error, 'invalid_blob_type');
    t.same(refused.body.limit, { id, value: false }, `${type}: the entitlement, without held`);
  }
  t.equal(await blobsOf(org.id), 0, 'a refused type takes no slot');

  await setOverride(app, 'graphdb.enabled', 'org', org.id, true);
  const created = await postBlob(user, org.id, 'svc.graph.graphdb');
  t.equal(created.status, 201);
  t.equal(created.body.blob.type, 'svc.graph.graphdb');

  // Turned off again: the existing blob stays, readable and counted; a new one is refused.
  await setOverride(app, 'graphdb.enabled', 'org', org.id, false);
  const again = await postBlob(user, org.id, 'svc.graph.graphdb');
  t.equal(again.body.error, 'invalid_blob_type');
  t.same(again.body.limit, { id: 'graphdb.enabled', value: false });
  t.equal((await call(app, 'GET', `/v1/blobs/${org.id}/${created.body.blob.id}`, { as: user })).status, 200);
  t.same(await entry(user, `/v1/orgs/${org.id}/limits`, 'platform.blobs_per_org'), {
    value: 3,
    source: 'default',
    held: 1,
  });
  t.same(
    await entry(user, `/v1/orgs/${org.id}/limits`, 'graphdb.enabled'),
    { value: false, source: 'org' },
    'the type still shows, false',
  );
  t.same(await entry(user, `/v1/blobs/${org.id}/${created.body.blob.id}/limits`, 'graphdb.enabled'), {
    value: false,
    source: 'org',
  });

  // A type enabled by default, turned off at the owner.
  await setOverride(app, 'workflow.enabled', 'user', user.user.id, false);
  const workflow = await postBlob(user, org.id);
  t.equal(workflow.body.error, 'invalid_blob_type');
  t.same(workflow.body.limit, { id: 'workflow.enabled', value: false });
});

t.test('the entitlement is checked before the quota; a type string naming no type has no limit', async (t) => {
  const user = await fresh();
  const org = await createOrg(app, user);
  for (let i = 0; i < 3; i++) await createBlob(app, user, org.id);
  const full = await postBlob(user, org.id, 'svc.dataset.nlp');
  t.equal(full.body.error, 'invalid_blob_type');
  t.same(full.body.limit, { id: 'nlp.enabled', value: false });
  for (const type of ['svc.compute.nothing', 'SVC.COMPUTE.WORKFLOW', 'graphdb']) {
    const res = await postBlob(user, org.id, type);
    t.equal(res.status, 400, type);
    t.equal(res.body.error, 'invalid_blob_type');
    t.notOk('limit' in res.body, `${type}: no limit object`);
  }
});

t.test('the nearest override wins: blob over organization over owner', async (t) => {
  const user = await fresh();
  const org = await createOrg(app, user);
  const { blob } = await createBlob(app, user, org.id);
  await setOverride(app, 'platform.blobs_per_org', 'user', user.user.id, 1);
  refusedWith(
    t,
    await postBlob(user, org.id),
    { id: 'platform.blobs_per_org', value: 1, held: 1 },
    "the owner's override",
  );
  await setOverride(app, 'platform.blobs_per_org', 'org', org.id, 2);
  const second = await postBlob(user, org.id);
  t.equal(second.status, 201, "the organization's override wins over the owner's");
  refusedWith(t, await postBlob(user, org.id), { id: 'platform.blobs_per_org', value: 2, held: 2 });

  await setOverride(app, 'platform.revisions_per_blob', 'user', user.user.id, 5);
  await setOverride(app, 'platform.revisions_per_blob', 'org', org.id, 1);
  refusedWith(
    t,
    await postRevision(user, org.id, blob.id),
    { id: 'platform.revisions_per_blob', value: 1, held: 1 },
    'org over owner',
  );
  await setOverride(app, 'platform.revisions_per_blob', 'blob', blob.id, 3);
  t.equal((await postRevision(user, org.id, blob.id)).status, 201, 'blob over org');
  t.equal((await postRevision(user, org.id, blob.id)).status, 201);
  refusedWith(t, await postRevision(user, org.id, blob.id), { id: 'platform.revisions_per_blob', value: 3, held: 3 });
  // The blob's override is its own: the other blob of the organization still has the org's 1.
  refusedWith(t, await postRevision(user, org.id, second.body.blob.id), {
    id: 'platform.revisions_per_blob',
    value: 1,
    held: 1,
  });
  t.same(await entry(user, `/v1/blobs/${org.id}/${blob.id}/limits`, 'platform.revisions_per_blob'), {
    value: 3,
    source: 'blob',
    held: 3,
  });
  t.same(await entry(user, `/v1/blobs/${org.id}/${second.body.blob.id}/limits`, 'platform.revisions_per_blob'), {
    value: 1,
    source: 'org',
    held: 1,
  });
});

t.test("an organization that changes owner follows the new owner's overrides on its next request", async (t) => {
  const giver = await fresh();
  const taker = await fresh();
  const org = await createOrg(app, giver);
  await setOverride(app, 'platform.blobs_per_org', 'user', giver.user.id, 1);
  await setOverride(app, 'platform.blobs_per_org', 'user', taker.user.id, 2);
  await createBlob(app, giver, org.id);
  refusedWith(t, await postBlob(giver, org.id), { id: 'platform.blobs_per_org', value: 1, held: 1 });

  const moved = await call(app, 'PATCH', `/v1/orgs/${org.id}`, { as: giver, body: { owner_id: taker.user.id } });
  t.equal(moved.status, 200);
  t.equal(moved.body.org.owner_id, taker.user.id);
  t.same(await entry(taker, `/v1/orgs/${org.id}/limits`, 'platform.blobs_per_org'), {
    value: 2,
    source: 'user',
    held: 1,
  });
  t.equal((await postBlob(taker, org.id)).status, 201, "the new owner's value applies at once");
  refusedWith(t, await postBlob(taker, org.id), { id: 'platform.blobs_per_org', value: 2, held: 2 });

  // The giver's own count no longer includes the organization; the taker's does.
  t.equal(await orgsOf(giver.user.id), 0);
  t.equal((await postOrg(giver)).status, 201, "the giver's slot was freed by the transfer");
  t.same(await entry(taker, `/v1/users/${taker.user.id}/limits`, 'platform.orgs_per_user'), {
    value: 1,
    source: 'default',
    held: 1,
  });
});
