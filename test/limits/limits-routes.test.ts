import t from 'tap';
import { BLOB_TYPE_NAMES } from '../../shared/blob-types.ts';
import { LIMIT_CATALOG, LIMIT_GROUPS } from '../../shared/limits/catalog.ts';
import { grant } from '../helpers/accounts.ts';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from '../helpers/app.ts';
import { createBlob, createOrg, createRevision } from '../helpers/resources.ts';

const { app, db } = await buildTestApp(t);
const ENTRY_KEYS = ['default', 'id', 'kind', 'most_permissive', 'per', 'set_on', 'source', 'unit', 'value'];
const ALL_GROUPS = LIMIT_GROUPS.map((g) => g.id);
const idsOf = (group: string) => LIMIT_CATALOG.filter((l) => l.group === group).map((l) => l.id);

/** Every entry of a reply by id, with the group it came in. */
function entries(groups: any[]): Map<string, any> {
  return new Map(groups.flatMap((g) => g.limits.map((l: any) => [l.id, { ...l, group: g.id }])));
}

/** Which entries carry `held`, and their counts. */
function helds(groups: any[]): Record<string, number> {
  return Object.fromEntries(
    groups.flatMap((g) => g.limits.filter((l: any) => 'held' in l).map((l: any) => [l.id, l.held])),
  );
}

async function read(url: string, as: Caller) {
  return call(app, 'GET', url, { as });
}

const owner = await signInAnonymous(app, { defaultLimits: true });
const stranger = await signInAnonymous(app, { defaultLimits: true });
const reader = await signInAnonymous(app, { defaultLimits: true });

t.test('Get User Limits: platform and every type group, held on platform.orgs_per_user only', async (t) => {
  const first = await read(`/v1/users/${owner.user.id}/limits`, owner);
  t.equal(first.status, 200);
  t.same(Object.keys(first.body).sort(), ['groups', 'status']);
  t.equal(first.body.status, 'success');
  const groups = first.body.groups;
  t.same(
    groups.map((g: any) => [g.id, g.label, g.family]),
    LIMIT_GROUPS.map((g) => [g.id, g.label, g.family]),
    'every group, in catalog order',
  );
  for (const group of groups) {
    t.same(Object.keys(group).sort(), ['family', 'id', 'label', 'limits']);
    t.same(
      group.limits.map((l: any) => l.id),
      idsOf(group.id),
      `${group.id}: every limit, in catalog order`,
    );
    for (const entry of group.limits) {
      const keys = entry.id === 'platform.orgs_per_user' ? [...ENTRY_KEYS, 'held'].sort() : ENTRY_KEYS;
      t.same(Object.keys(entry).sort(), keys, entry.id);
    }
  }
  t.same(groups[0].limits[0], {
    id: 'platform.orgs_per_user',
    kind: 'quota',
    unit: 'count',
    per: 'user',
    default: 1,
    value: 1,
    source: 'default',
    most_permissive: null,
    set_on: ['user'],
    held: 0,
  });
  t.same(helds(groups), { 'platform.orgs_per_user': 0 });
  t.ok(groups.flatMap((g: any) => g.limits).every((l: any) => l.source === 'default'));
  const all = entries(groups);
  t.same(all.get('workflow.execution_input_bytes').set_on, [], 'a fixed limit has an empty set_on');
  t.equal(all.get('workflow.session_objects_per_session').most_permissive, 10_000);
  t.equal(all.get('graphdb.enabled').value, false, 'a type not enabled still appears, false');

  await createOrg(app, owner);
  await setOverride(app, 'workflow.sessions_per_revision', 'user', owner.user.id, 40);
  await setOverride(app, 'workflow.code_imports', 'user', owner.user.id, ['zod']);
  const me = await read('/v1/users/me/limits', owner);
  t.equal(me.status, 200, 'me resolves to the caller');
  t.same(helds(me.body.groups), { 'platform.orgs_per_user': 1 });
  const mine = entries(me.body.groups);
  t.match(mine.get('workflow.sessions_per_revision'), { value: 40, default: 30, source: 'user' });
  t.match(mine.get('workflow.code_imports'), { value: ['zod'], default: [], source: 'user' });
});

t.test("Get User Limits: as a new organization starts, ignoring the user's organizations' overrides", async (t) => {
  const user = await signInAnonymous(app, { defaultLimits: true });
  const org = await createOrg(app, user);
  await setOverride(app, 'platform.blobs_per_org', 'org', org.id, 9);
  const { body } = await read(`/v1/users/${user.user.id}/limits`, user);
  t.match(entries(body.groups).get('platform.blobs_per_org'), { value: 3, source: 'default' });
  t.notOk(
    'held' in entries(body.groups).get('platform.blobs_per_org'),
    'a quota held by organizations has no held on a user',
  );
});

t.test("Get User Limits: self or admin standing (a service account's owner); 403 otherwise", async (t) => {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (kind, name, owner_id) VALUES ('service', 'bot', $1::uuid) RETURNING id`,
    [owner.user.id],
  );
  const bot = rows[0]!.id;
  const asOwner = await read(`/v1/users/${bot}/limits`, owner);
  t.equal(asOwner.status, 200, 'the owner of a service account');
  t.same(helds(asOwner.body.groups), { 'platform.orgs_per_user': 0 });

  for (const url of [`/v1/users/${owner.user.id}/limits`, `/v1/users/${bot}/limits`]) {
    const res = await read(url, stranger);
    t.equal(res.status, 403, url);
    t.equal(res.body.error, 'forbidden');
  }
  const missing = await read('/v1/users/00000000-0000-4000-8000-000000000000/limits', owner);
  t.equal(missing.status, 404);
  t.equal(missing.body.error, 'not_found');
  t.equal((await call(app, 'GET', `/v1/users/${owner.user.id}/limits`)).status, 401, 'no credential');
});

t.test(
  'Get Organization Limits: platform without orgs_per_user, every type group, held on the two org quotas',
  async (t) => {
    const user = await signInAnonymous(app, { defaultLimits: true });
    const org = await createOrg(app, user);
    const { revision } = await createBlob(app, user, org.id);
    await createBlob(app, user, org.id);
    await setOverride(app, 'platform.blobs_per_org', 'user', user.user.id, 5);
    await setOverride(app, 'workflow.running_executions_per_org', 'org', org.id, 4);
    await setOverride(app, 'workflow.running_executions_per_org', 'user', user.user.id, 8);

    // Two unfinished executions and one finished: only the unfinished are held.
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO sessions (revision_id) VALUES ($1::uuid) RETURNING id`,
      [revision.id],
    );
    for (const [status, ended] of [
      ['running', null],
      ['queued', null],
      ['succeeded', new Date().toISOString()],
    ] as const) {
      await db.query(
        `INSERT INTO executions (session_id, org_id, definition_id, graph, status, limits, ended_at)
       VALUES ($1::uuid, $2::uuid, gen_random_uuid(), '{}', $3::text, '{}', $4::timestamptz)`,
        [rows[0]!.id, org.id, status, ended],
      );
    }

    const { status, body } = await read(`/v1/orgs/${org.alias}/limits`, user);
    t.equal(status, 200);
    t.same(
      body.groups.map((g: any) => g.id),
      ALL_GROUPS,
    );
    t.same(
      body.groups[0].limits.map((l: any) => l.id),
      ['platform.blobs_per_org', 'platform.revisions_per_blob'],
    );
    for (const group of body.groups.slice(1))
      t.same(
        group.limits.map((l: any) => l.id),
        idsOf(group.id),
        group.id,
      );
    t.same(helds(body.groups), { 'platform.blobs_per_org': 2, 'workflow.running_executions_per_org': 2 });
    t.same(body.groups[0].limits[0], {
      id: 'platform.blobs_per_org',
      kind: 'quota',
      unit: 'count',
      per: 'org',
      default: 3,
      value: 5,
      source: 'user',
      most_permissive: null,
      set_on: ['user', 'org'],
      held: 2,
    });
    t.match(
      entries(body.groups).get('workflow.running_executions_per_org'),
      { value: 4, source: 'org', held: 2 },
      'the org over its owner',
    );
  },
);

t.test('Get Organization Limits: needs read; a stranger gets 404 on a private organization', async (t) => {
  const user = await signInAnonymous(app);
  const privateOrg = await createOrg(app, user);
  const publicOrg = await createOrg(app, user, { visibility: 'public' });
  const hidden = await read(`/v1/orgs/${privateOrg.id}/limits`, stranger);
  t.equal(hidden.status, 404);
  t.equal(hidden.body.error, 'not_found');
  t.equal((await read(`/v1/orgs/${privateOrg.alias}/limits`, stranger)).status, 404, 'by alias too');
  t.equal((await read(`/v1/orgs/${publicOrg.id}/limits`, stranger)).status, 200, 'public gives read');
  await grant(app, user.headers, 'organization', privateOrg.id, reader.user.id, 'read');
  const member = await read(`/v1/orgs/${privateOrg.id}/limits`, reader);
  t.equal(member.status, 200, 'a read member');
  t.same(helds(member.body.groups), { 'platform.blobs_per_org': 0, 'workflow.running_executions_per_org': 0 });
  t.equal((await read('/v1/orgs/no-such-org/limits', user)).status, 404);
});

t.test("Get Blob Limits: platform.revisions_per_blob and the blob's own type group, for every type", async (t) => {
  const user = await signInAnonymous(app);
  const org = await createOrg(app, user);
  for (const type of BLOB_TYPE_NAMES) {
    const { blob } = await createBlob(app, user, org.id, { type });
    const { status, body } = await read(`/v1/blobs/${org.id}/${blob.id}/limits`, user);
    t.equal(status, 200, type);
    t.same(
      body.groups.map((g: any) => g.id),
      ['platform', type],
      type,
    );
    t.same(
      body.groups[0].limits.map((l: any) => l.id),
      ['platform.revisions_per_blob'],
    );
    t.same(
      body.groups[1].limits.map((l: any) => l.id),
      idsOf(type),
      `${type}: every limit of the type`,
    );
    t.same(helds(body.groups), { 'platform.revisions_per_blob': 1 }, `${type}: held on revisions_per_blob only`);
  }
});

t.test('Get Blob Limits: held counts revisions, sources come from the nearest level', async (t) => {
  const user = await signInAnonymous(app, { defaultLimits: true });
  const org = await createOrg(app, user);
  const { blob } = await createBlob(app, user, org.id, { type: 'svc.compute.workflow' });
  await createRevision(app, user, org.id, blob.id);
  await setOverride(app, 'workflow.sessions_per_revision', 'user', user.user.id, 40);
  await setOverride(app, 'workflow.sessions_per_revision', 'org', org.id, 50);
  await setOverride(app, 'workflow.definitions_per_revision', 'org', org.id, 12);
  await setOverride(app, 'workflow.sessions_per_revision', 'blob', blob.id, 5);
  await setOverride(app, 'workflow.execution_retention_days', 'blob', blob.id, null);
  const { body } = await read(`/v1/blobs/${org.alias}/${blob.alias}/limits`, user);
  const all = entries(body.groups);
  t.same(all.get('platform.revisions_per_blob'), {
    id: 'platform.revisions_per_blob',
    kind: 'quota',
    unit: 'count',
    per: 'blob',
    default: 2,
    value: 2,
    source: 'default',
    most_permissive: null,
    set_on: ['user', 'org', 'blob'],
    held: 2,
    group: 'platform',
  });
  t.match(all.get('workflow.sessions_per_revision'), { value: 5, source: 'blob' });
  t.notOk('held' in all.get('workflow.sessions_per_revision'), "a revision's quota has no held on a blob read");
  t.match(all.get('workflow.definitions_per_revision'), { value: 12, source: 'org' });
  t.match(all.get('workflow.execution_retention_days'), { value: null, source: 'blob' }, 'retention null is a value');
  t.match(all.get('workflow.playgrounds_per_revision'), { value: 10, source: 'default' });
});

t.test('Get Blob Limits: the example of docs/limits.md, exactly', async (t) => {
  const user = await signInAnonymous(app);
  const org = await createOrg(app, user);
  const { blob } = await createBlob(app, user, org.id, { type: 'svc.compute.scheduler' });
  await setOverride(app, 'scheduler.schedules_per_revision', 'org', org.id, 20);
  // The roomy fixture sets revisions_per_blob on the user; the example shows the default.
  await db.query(
    `DELETE FROM limit_overrides WHERE target_id = $1::uuid AND limit_id = 'platform.revisions_per_blob'`,
    [user.user.id],
  );
  const { body } = await read(`/v1/blobs/${org.id}/${blob.id}/limits`, user);
  t.same(body, {
    status: 'success',
    groups: [
      {
        id: 'platform',
        label: 'Global',
        family: 'platform',
        limits: [
          {
            id: 'platform.revisions_per_blob',
            kind: 'quota',
            unit: 'count',
            per: 'blob',
            default: 2,
            value: 2,
            source: 'default',
            most_permissive: null,
            set_on: ['user', 'org', 'blob'],
            held: 1,
          },
        ],
      },
      {
        id: 'svc.compute.scheduler',
        label: 'Scheduler',
        family: 'scheduler',
        limits: [
          {
            id: 'scheduler.enabled',
            kind: 'entitlement',
            unit: 'flag',
            per: 'org',
            default: true,
            value: true,
            source: 'default',
            most_permissive: null,
            set_on: ['user', 'org'],
          },
          {
            id: 'scheduler.schedules_per_revision',
            kind: 'quota',
            unit: 'count',
            per: 'revision',
            default: 10,
            value: 20,
            source: 'org',
            most_permissive: null,
            set_on: ['user', 'org', 'blob'],
          },
          {
            id: 'scheduler.min_interval_seconds',
            kind: 'ceiling',
            unit: 'seconds',
            per: 'schedule',
            default: 60,
            value: 60,
            source: 'default',
            most_permissive: 60,
            set_on: ['user', 'org', 'blob'],
          },
          {
            id: 'scheduler.run_retention_days',
            kind: 'retention',
            unit: 'days',
            per: 'run',
            default: 30,
            value: 30,
            source: 'default',
            most_permissive: null,
            set_on: ['user', 'org', 'blob'],
          },
        ],
      },
    ],
  });
});

t.test('Get Blob Limits: needs read on the blob; 404 for a stranger on a private blob', async (t) => {
  const user = await signInAnonymous(app);
  const org = await createOrg(app, user, { visibility: 'public' });
  const { blob: privateBlob } = await createBlob(app, user, org.id);
  const { blob: publicBlob } = await createBlob(app, user, org.id, { visibility: 'public' });
  const hidden = await read(`/v1/blobs/${org.id}/${privateBlob.id}/limits`, stranger);
  t.equal(hidden.status, 404);
  t.equal(hidden.body.error, 'not_found');
  t.equal((await read(`/v1/blobs/${org.id}/${publicBlob.id}/limits`, stranger)).status, 200, 'a public blob');
  await grant(app, user.headers, 'blob', privateBlob.id, reader.user.id, 'read');
  t.equal(
    (await read(`/v1/blobs/${org.id}/${privateBlob.id}/limits`, reader)).status,
    200,
    'a read member of the blob',
  );
  const other = await createOrg(app, user);
  t.equal(
    (await read(`/v1/blobs/${other.id}/${privateBlob.id}/limits`, user)).status,
    404,
    "a blob under another organization's path",
  );
});

t.test('Get User Limits refuses a key confined to an organization with 403, like any non-admin caller', async (t) => {
  const minter = await signInAnonymous(app);
  const org = await createOrg(app, minter);
  const minted = await call(app, 'POST', '/v1/api-keys', {
    as: minter,
    body: { target: 'organization', target_id: org.id, role: 'admin' },
  });
  t.equal(minted.status, 201);
  const key = { headers: { 'x-api-key': minted.body.api_key.key } };
  const profile = await call(app, 'GET', `/v1/users/${stranger.user.id}`, key);
  t.equal(profile.status, 200, 'the public profile is readable with the key');
  for (const target of [stranger.user.id, minter.user.id]) {
    const res = await call(app, 'GET', `/v1/users/${target}/limits`, key);
    t.equal(res.status, 403);
    t.equal(res.body.error, 'forbidden');
  }
});
