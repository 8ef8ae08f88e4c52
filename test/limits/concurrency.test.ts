import t, { type Test } from 'tap';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from '../helpers/app.ts';
import { createBlob, createOrg, uniqueAlias } from '../helpers/resources.ts';

// Many simultaneous creates against a small quota: exactly the free slots are taken, every other
// request is refused with the full count, and `held` on the limits route equals what exists.
const { app, db } = await buildTestApp(t);
const RACERS = 20;

interface Outcome {
  status: number;
  body: any;
}

/** Fires `RACERS` requests at once and sorts the answers into successes and refusals. */
async function race(
  t: Test,
  fire: (i: number) => Promise<Outcome>,
  limit: { id: string; value: number },
  free: number,
): Promise<Outcome[]> {
  const outcomes = await Promise.all(Array.from({ length: RACERS }, (_, i) => fire(i)));
  const created = outcomes.filter((o) => o.status === 201);
  const refused = outcomes.filter((o) => o.status !== 201);
  t.equal(created.length, free, `exactly the ${free} free slots were taken`);
  t.equal(refused.length, RACERS - free);
  for (const o of refused) {
    t.equal(o.status, 400);
    t.equal(o.body.error, 'limit_exceeded');
    // Every refused request arrived (took the lock) when the holder was full.
    t.same(o.body.limit, { ...limit, held: limit.value });
  }
  return created;
}

async function count(sql: string, id: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(sql, [id]);
  return rows[0]!.n;
}

async function held(as: Caller, url: string, id: string): Promise<number> {
  const { status, body } = await call(app, 'GET', url, { as });
  if (status !== 200) throw new Error(`${url}: ${status}`);
  return body.groups.flatMap((g: any) => g.limits).find((l: any) => l.id === id).held;
}

t.test('platform.blobs_per_org: 5 on an organization holding 2, 20 creates at once', async (t) => {
  const user = await signInAnonymous(app, { defaultLimits: true });
  const org = await createOrg(app, user);
  await createBlob(app, user, org.id);
  await createBlob(app, user, org.id);
  await setOverride(app, 'platform.blobs_per_org', 'org', org.id, 5);

  const created = await race(
    t,
    () =>
      call(app, 'POST', `/v1/blobs/${org.id}`, {
        as: user,
        body: { type: 'svc.compute.workflow', alias: uniqueAlias('racer') },
      }),
    { id: 'platform.blobs_per_org', value: 5 },
    3,
  );

  const inDb = await count('SELECT count(*)::int AS n FROM blobs WHERE org_id = $1::uuid', org.id);
  t.equal(inDb, 5);
  t.equal(
    await held(user, `/v1/orgs/${org.id}/limits`, 'platform.blobs_per_org'),
    inDb,
    'held equals the blobs that exist',
  );
  // Each winner's first revision came with it, and nothing of a loser was left behind.
  for (const o of created)
    t.equal(await count('SELECT count(*)::int AS n FROM revisions WHERE blob_id = $1::uuid', o.body.blob.id), 1);
  t.equal(
    await count(`SELECT count(*)::int AS n FROM blobs WHERE org_id = $1::uuid AND alias LIKE 'racer-%'`, org.id),
    3,
  );
});

t.test('platform.revisions_per_blob: 6 on a blob holding 1, 20 creates at once', async (t) => {
  const user = await signInAnonymous(app, { defaultLimits: true });
  const org = await createOrg(app, user);
  const { blob } = await createBlob(app, user, org.id);
  await setOverride(app, 'platform.revisions_per_blob', 'blob', blob.id, 6);

  const created = await race(
    t,
    () => call(app, 'POST', `/v1/blobs/${org.id}/${blob.id}/revisions`, { as: user, body: {} }),
    { id: 'platform.revisions_per_blob', value: 6 },
    5,
  );

  const inDb = await count('SELECT count(*)::int AS n FROM revisions WHERE blob_id = $1::uuid', blob.id);
  t.equal(inDb, 6);
  t.equal(await held(user, `/v1/blobs/${org.id}/${blob.id}/limits`, 'platform.revisions_per_blob'), inDb);
  t.same(
    created.map((o) => o.body.revision.number).sort((a, b) => a - b),
    [2, 3, 4, 5, 6],
    'numbers are unique and consecutive',
  );
});

t.test('platform.orgs_per_user: 3 on a user holding 0, 20 creates at once', async (t) => {
  const user = await signInAnonymous(app, { defaultLimits: true });
  await setOverride(app, 'platform.orgs_per_user', 'user', user.user.id, 3);

  await race(
    t,
    () => call(app, 'POST', '/v1/orgs', { as: user, body: { alias: uniqueAlias('racer') } }),
    { id: 'platform.orgs_per_user', value: 3 },
    3,
  );

  const inDb = await count('SELECT count(*)::int AS n FROM orgs WHERE owner_id = $1::uuid', user.user.id);
  t.equal(inDb, 3);
  t.equal(await held(user, `/v1/users/${user.user.id}/limits`, 'platform.orgs_per_user'), inDb);
});

t.test('creates and deletes racing on a full organization never pass the value', async (t) => {
  const user = await signInAnonymous(app, { defaultLimits: true });
  const org = await createOrg(app, user);
  const blobs = [];
  for (let i = 0; i < 3; i++) blobs.push((await createBlob(app, user, org.id)).blob);
  // Two deletes free two slots while twenty creates compete for them.
  const deletes = blobs.slice(0, 2).map((b) => call(app, 'DELETE', `/v1/blobs/${org.id}/${b.id}`, { as: user }));
  const creates = Array.from({ length: RACERS }, () =>
    call(app, 'POST', `/v1/blobs/${org.id}`, {
      as: user,
      body: { type: 'svc.compute.workflow', alias: uniqueAlias('swap') },
    }),
  );
  const [deleted, made] = await Promise.all([Promise.all(deletes), Promise.all(creates)]);
  t.ok(deleted.every((d) => d.status === 200));
  const won = made.filter((m) => m.status === 201).length;
  t.ok(won <= 2, `at most the two freed slots were taken (${won})`);
  for (const m of made.filter((m) => m.status !== 201)) {
    t.equal(m.body.error, 'limit_exceeded');
    t.equal(m.body.limit.held, 3, 'a refusal saw the organization full');
  }
  const inDb = await count('SELECT count(*)::int AS n FROM blobs WHERE org_id = $1::uuid', org.id);
  t.equal(inDb, 1 + won);
  t.ok(inDb <= 3);
  t.equal(await held(user, `/v1/orgs/${org.id}/limits`, 'platform.blobs_per_org'), inDb);
});
