import t from 'tap';
import { createDb, type Db } from '../../shared/db/db.ts';
import { loadOverrides } from '../../shared/limits/load-overrides.ts';
import { resolveLimit, resolveLimits } from '../../shared/limits/resolve.ts';
import { createTestDatabase } from '../helpers/db.ts';

const db: Db = createDb({ connectionString: await createTestDatabase(t), max: 4 });
t.teardown(() => db.close());

async function user(alias: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (alias, kind) VALUES ($1::text, 'human') RETURNING id`,
    [alias],
  );
  return rows[0]!.id;
}
async function org(alias: string, ownerId: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO orgs (alias, owner_id) VALUES ($1::text, $2::uuid) RETURNING id`,
    [alias, ownerId],
  );
  return rows[0]!.id;
}
async function blob(alias: string, orgId: string, type = 'svc.compute.workflow'): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO blobs (alias, org_id, type) VALUES ($1::text, $2::uuid, $3::text) RETURNING id`,
    [alias, orgId, type],
  );
  return rows[0]!.id;
}
async function override(
  limitId: string,
  targetType: 'user' | 'org' | 'blob',
  targetId: string,
  value: unknown,
): Promise<void> {
  await db.query(
    `INSERT INTO limit_overrides (limit_id, target_type, target_id, value, set_by) VALUES ($1::text, $2::text, $3::uuid, $4::jsonb, 'test')`,
    [limitId, targetType, targetId, JSON.stringify(value)],
  );
}

const alice = await user('alice');
const bob = await user('bob');
const acme = await org('acme', alice);
const other = await org('other', bob);
const flows = await blob('flows', acme);
const sibling = await blob('sibling', acme);
const elsewhere = await blob('elsewhere', other);

await override('platform.blobs_per_org', 'user', alice, 5);
await override('workflow.sessions_per_revision', 'user', alice, 40);
await override('workflow.code_imports', 'user', alice, ['lodash', 'date-fns']);
await override('workflow.sessions_per_revision', 'org', acme, 50);
await override('workflow.execution_retention_days', 'org', acme, null);
await override('workflow.sessions_per_revision', 'blob', flows, 5);
await override('workflow.code_imports', 'blob', flows, ['zod']);
await override('workflow.sessions_per_revision', 'blob', sibling, 6);
await override('workflow.sessions_per_revision', 'user', bob, 99);
await override('graphdb.enabled', 'org', other, true);
await override('workflow.sessions_per_revision', 'blob', elsewhere, 7);

t.test("a blob: its own, its organization's and the owner's overrides, nobody else's", async (t) => {
  const loaded = await loadOverrides(db, { blobId: flows });
  t.same(loaded.chain, { userId: alice, orgId: acme, blobId: flows });
  t.same(loaded.overrides, {
    user: {
      'platform.blobs_per_org': 5,
      'workflow.sessions_per_revision': 40,
      'workflow.code_imports': ['lodash', 'date-fns'],
    },
    org: { 'workflow.sessions_per_revision': 50, 'workflow.execution_retention_days': null },
    blob: { 'workflow.sessions_per_revision': 5, 'workflow.code_imports': ['zod'] },
  });
  const all = resolveLimits(loaded.overrides);
  t.same(all['workflow.sessions_per_revision'], { id: 'workflow.sessions_per_revision', value: 5, source: 'blob' });
  t.same(all['workflow.code_imports'], { id: 'workflow.code_imports', value: ['zod'], source: 'blob' });
  t.same(
    all['workflow.execution_retention_days'],
    { id: 'workflow.execution_retention_days', value: null, source: 'org' },
    'JSON null survives the round trip',
  );
  t.same(all['platform.blobs_per_org'], { id: 'platform.blobs_per_org', value: 5, source: 'user' });
  t.same(all['graphdb.enabled'], { id: 'graphdb.enabled', value: false, source: 'default' });
});

t.test("an organization: its own and its owner's, no blob level", async (t) => {
  const loaded = await loadOverrides(db, { orgId: acme });
  t.same(loaded.chain, { userId: alice, orgId: acme, blobId: null });
  t.same(Object.keys(loaded.overrides), ['user', 'org']);
  t.same(loaded.overrides.org, { 'workflow.sessions_per_revision': 50, 'workflow.execution_retention_days': null });
  t.same(resolveLimit('workflow.sessions_per_revision', loaded.overrides), {
    id: 'workflow.sessions_per_revision',
    value: 50,
    source: 'org',
  });
});

t.test("a user: the user's own only", async (t) => {
  const loaded = await loadOverrides(db, { userId: bob });
  t.same(loaded, {
    chain: { userId: bob, orgId: null, blobId: null },
    overrides: { user: { 'workflow.sessions_per_revision': 99 } },
  });
});

t.test('a target without overrides still reports its chain, with empty maps', async (t) => {
  const carol = await user('carol');
  const empty = await org('empty', carol);
  const bare = await blob('bare', empty, 'svc.model.onnx');
  t.same(await loadOverrides(db, { blobId: bare }), {
    chain: { userId: carol, orgId: empty, blobId: bare },
    overrides: { user: {}, org: {}, blob: {} },
  });
  t.same(await loadOverrides(db, { userId: carol }), {
    chain: { userId: carol, orgId: null, blobId: null },
    overrides: { user: {} },
  });
});

t.test('a target that does not exist', async (t) => {
  const missing = '00000000-0000-4000-8000-000000000000';
  t.same(await loadOverrides(db, { blobId: missing }), { chain: null, overrides: {} });
  t.same(await loadOverrides(db, { orgId: missing }), { chain: null, overrides: {} });
  t.same(await loadOverrides(db, { userId: missing }), { chain: null, overrides: {} });
});

t.test("ownership is read on every request: a new owner's overrides apply at once", async (t) => {
  const dave = await user('dave');
  const moving = await org('moving', alice);
  const box = await blob('box', moving);
  await override('workflow.sessions_per_revision', 'user', dave, 12);
  t.same(resolveLimit('workflow.sessions_per_revision', (await loadOverrides(db, { blobId: box })).overrides), {
    id: 'workflow.sessions_per_revision',
    value: 40,
    source: 'user',
  });
  await db.query(`UPDATE orgs SET owner_id = $1::uuid WHERE id = $2::uuid`, [dave, moving]);
  const after = await loadOverrides(db, { blobId: box });
  t.equal(after.chain?.userId, dave);
  t.same(resolveLimit('workflow.sessions_per_revision', after.overrides), {
    id: 'workflow.sessions_per_revision',
    value: 12,
    source: 'user',
  });
  t.same(after.overrides.user, { 'workflow.sessions_per_revision': 12 }, 'nothing of the old owner is left');
});

t.test('one override per limit and target', async (t) => {
  await t.rejects(override('workflow.sessions_per_revision', 'blob', flows, 8), { code: '23505' });
});

t.test('an override needs a target of its kind that exists', async (t) => {
  await t.rejects(
    override('platform.orgs_per_user', 'user', acme, 2),
    { code: '23503' },
    'an organization id is not a user',
  );
  await t.rejects(override('platform.orgs_per_user', 'team' as 'user', alice, 2), { code: '23514' });
  await t.rejects(
    db.query(
      `INSERT INTO limit_overrides (limit_id, target_type, target_id, value, set_by) VALUES ('platform.orgs_per_user', 'user', $1::uuid, NULL, 'test')`,
      [alice],
    ),
    { code: '23502' },
    'SQL NULL is not a value: absence is',
  );
});

t.test('deleting a target deletes its overrides, the history stays', async (t) => {
  const erin = await user('erin');
  const doomed = await org('doomed', erin);
  const inside = await blob('inside', doomed);
  await override('platform.revisions_per_blob', 'blob', inside, 4);
  await override('platform.blobs_per_org', 'org', doomed, 4);
  await override('platform.orgs_per_user', 'user', erin, 4);
  await db.query(
    `INSERT INTO limit_override_changes (limit_id, target_type, target_id, action, old_value, new_value, changed_by)
     VALUES ('platform.blobs_per_org', 'org', $1::uuid, 'set', NULL, '4'::jsonb, 'test')`,
    [doomed],
  );
  const count = async (id: string) =>
    (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM limit_overrides WHERE target_id = $1::uuid`, [id]))
      .rows[0]!.n;
  await db.query(`DELETE FROM blobs WHERE id = $1::uuid`, [inside]);
  t.equal(await count(inside), 0, 'blob');
  t.equal(await count(doomed), 1);
  await db.query(`DELETE FROM orgs WHERE id = $1::uuid`, [doomed]);
  t.equal(await count(doomed), 0, 'organization');
  await db.query(`DELETE FROM users WHERE id = $1::uuid`, [erin]);
  t.equal(await count(erin), 0, 'user');
  const history = await db.query(`SELECT action, new_value FROM limit_override_changes WHERE target_id = $1::uuid`, [
    doomed,
  ]);
  t.same(history.rows, [{ action: 'set', new_value: 4 }]);
});

t.test('a history row of a set carries the new value, a clear none', async (t) => {
  await t.rejects(
    db.query(
      `INSERT INTO limit_override_changes (limit_id, target_type, target_id, action, old_value, new_value, changed_by)
     VALUES ('platform.orgs_per_user', 'user', $1::uuid, 'set', NULL, NULL, 'test')`,
      [alice],
    ),
    { code: '23514' },
  );
  await db.query(
    `INSERT INTO limit_override_changes (limit_id, target_type, target_id, action, old_value, new_value, changed_by)
     VALUES ('workflow.execution_retention_days', 'org', $1::uuid, 'clear', 'null'::jsonb, NULL, 'test')`,
    [acme],
  );
  t.pass('clear with the old JSON null recorded');
});

t.test('the load runs inside a transaction', async (t) => {
  let seen: unknown;
  await t.rejects(
    db.transaction(async (tx) => {
      await tx.query(
        `UPDATE limit_overrides SET value = '41'::jsonb WHERE target_type = 'user' AND target_id = $1::uuid AND limit_id = 'workflow.sessions_per_revision'`,
        [alice],
      );
      seen = (await loadOverrides(tx, { orgId: acme })).overrides.user?.['workflow.sessions_per_revision'];
      throw new Error('roll back');
    }),
    /roll back/,
  );
  t.equal(seen, 41, 'sees its own uncommitted write');
  t.equal((await loadOverrides(db, { orgId: acme })).overrides.user?.['workflow.sessions_per_revision'], 40);
});
