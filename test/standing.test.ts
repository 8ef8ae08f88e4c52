import t from 'tap';
import type { QueryResultRow } from 'pg';
import type { Queryable } from '../shared/db/db.ts';
import type { Role } from '../shared/roles.ts';
import type { Principal } from '../control-plane/auth/principal.ts';
import { blobFor, orgFor, revisionFor, userStanding } from '../control-plane/access/standing.ts';
import { targetStanding } from '../control-plane/access/targets.ts';
import { buildTestApp, call, type Caller } from './helpers/app.ts';
import { grant, humans, insertBlob, insertOrg, insertServiceAccount } from './helpers/access.ts';

const { app, db } = await buildTestApp(t);
const ctx = app.ctx;
const [owner, reader, writer, admin, blobMember, stranger, dummy] = await humans(app, 7);

const privateOrg = await insertOrg(db, owner!.user.id, 'private');
const publicOrg = await insertOrg(db, owner!.user.id, 'public');
const privateBlob = await insertBlob(db, privateOrg.id, 'private');
const publicBlob = await insertBlob(db, privateOrg.id, 'public');
const blobOfPublicOrg = await insertBlob(db, publicOrg.id, 'private');
for (const org of [privateOrg, publicOrg]) {
  await grant(app, owner!, 'organization', org.id, reader!.user.id, 'read');
  await grant(app, owner!, 'organization', org.id, writer!.user.id, 'write');
  await grant(app, owner!, 'organization', org.id, admin!.user.id, 'admin');
}
await grant(app, owner!, 'blob', privateBlob.id, blobMember!.user.id, 'write');
// A blob membership above the organization membership raises standing on that blob only.
await grant(app, owner!, 'blob', privateBlob.id, reader!.user.id, 'admin');

const callers: Record<string, Caller> = {
  stranger: stranger!,
  reader: reader!,
  writer: writer!,
  admin: admin!,
  owner: owner!,
  blobMember: blobMember!,
};
const targets = {
  'private org': ['organization', privateOrg.id],
  'public org': ['organization', publicOrg.id],
  'private blob': ['blob', privateBlob.id],
  'public blob in a private org': ['blob', publicBlob.id],
  'private blob in a public org': ['blob', blobOfPublicOrg.id],
} as const;

// [target, caller, read status, admin status]: reads need read, granting needs admin; below
// read the target does not exist (404), between read and the need it is 403.
const table: Array<[keyof typeof targets, string, number, number]> = [
  ['private org', 'stranger', 404, 404],
  ['private org', 'blobMember', 404, 404],
  ['private org', 'reader', 200, 403],
  ['private org', 'writer', 200, 403],
  ['private org', 'admin', 200, 200],
  ['private org', 'owner', 200, 200],
  ['public org', 'stranger', 200, 403],
  ['public org', 'reader', 200, 403],
  ['public org', 'writer', 200, 403],
  ['public org', 'admin', 200, 200],
  ['public org', 'owner', 200, 200],
  ['private blob', 'stranger', 404, 404],
  ['private blob', 'blobMember', 200, 403],
  ['private blob', 'reader', 200, 200],
  ['private blob', 'writer', 200, 403],
  ['private blob', 'admin', 200, 200],
  ['private blob', 'owner', 200, 200],
  ['public blob in a private org', 'stranger', 200, 403],
  ['public blob in a private org', 'blobMember', 200, 403],
  ['public blob in a private org', 'reader', 200, 403],
  ['public blob in a private org', 'admin', 200, 200],
  ['private blob in a public org', 'stranger', 404, 404],
  ['private blob in a public org', 'reader', 200, 403],
  ['private blob in a public org', 'owner', 200, 200],
];

t.test('404 versus 403 over HTTP', async (t) => {
  for (const [name, who, readStatus, adminStatus] of table) {
    const [target, id] = targets[name];
    const as = callers[who]!;
    const read = await call(app, 'GET', `/v1/members/target/${target}/${id}`, { as });
    t.equal(read.status, readStatus, `${who} reads the ${name}`);
    const change = await call(app, 'POST', '/v1/members', {
      as,
      body: { target, target_id: id, user_id: dummy!.user.id, role: 'read' },
    });
    t.equal(change.status, adminStatus, `${who} grants on the ${name}`);
    if (adminStatus !== 200) t.equal(change.body.error, adminStatus === 404 ? 'not_found' : 'forbidden');
  }
});

function human(caller: Caller): Principal {
  return { userId: caller.user.id, kind: 'human', credential: 'bearer', humanId: caller.user.id };
}

function withKey(caller: Caller, target: 'organization' | 'blob' | 'user', targetId: string, role: Role): Principal {
  return {
    ...human(caller),
    credential: 'api_key',
    key: { id: '00000000-0000-4000-8000-000000000000', target, targetId, role },
  };
}

t.test('standing, role cap and confinement, level by level', async (t) => {
  const cases: Array<[string, Principal, keyof typeof targets, Role | null]> = [
    ['writer', human(writer!), 'private org', 'write'],
    ['writer', human(writer!), 'private blob', 'write'],
    ['blob member', human(blobMember!), 'private blob', 'write'],
    ['blob member', human(blobMember!), 'public blob in a private org', 'read'],
    ['org reader with blob admin', human(reader!), 'private blob', 'admin'],
    ['org reader with blob admin', human(reader!), 'public blob in a private org', 'read'],
    ['owner, read org key', withKey(owner!, 'organization', privateOrg.id, 'read'), 'private org', 'read'],
    ['owner, write org key', withKey(owner!, 'organization', privateOrg.id, 'write'), 'private blob', 'write'],
    ['owner, admin org key', withKey(owner!, 'organization', privateOrg.id, 'admin'), 'public org', null],
    [
      'owner, admin org key',
      withKey(owner!, 'organization', privateOrg.id, 'admin'),
      'private blob in a public org',
      null,
    ],
    ['writer, admin org key', withKey(writer!, 'organization', privateOrg.id, 'admin'), 'private org', 'write'],
    ['owner, write blob key', withKey(owner!, 'blob', privateBlob.id, 'write'), 'private blob', 'write'],
    ['owner, admin blob key', withKey(owner!, 'blob', privateBlob.id, 'admin'), 'public blob in a private org', null],
    ['owner, admin blob key', withKey(owner!, 'blob', privateBlob.id, 'admin'), 'private org', null],
    ['stranger, admin user key', withKey(stranger!, 'user', stranger!.user.id, 'admin'), 'public org', 'read'],
    ['owner, read user key', withKey(owner!, 'user', owner!.user.id, 'read'), 'private blob', 'read'],
    ['owner, write user key', withKey(owner!, 'user', owner!.user.id, 'write'), 'public org', 'write'],
  ];
  for (const [who, principal, name, expected] of cases) {
    const [target, id] = targets[name];
    const found = await targetStanding(ctx, principal, target, id);
    t.equal(found?.role ?? null, expected, `${who} on the ${name}`);
  }
});

t.test('standing over accounts', async (t) => {
  const bot = await insertServiceAccount(db, owner!.user.id);
  const botRow = { id: bot.id, kind: 'service' as const, owner_id: owner!.user.id };
  const ownerRow = { id: owner!.user.id, kind: 'human' as const, owner_id: null };
  t.equal(userStanding(human(owner!), botRow), 'admin', 'the owner of a service account');
  t.equal(userStanding(human(owner!), ownerRow), 'admin', 'the account itself');
  t.equal(userStanding(human(stranger!), botRow), 'read', 'anyone else reads the public profile');
  t.equal(userStanding(withKey(owner!, 'user', owner!.user.id, 'write'), botRow), 'write', 'capped by a user key');
  t.equal(
    userStanding(withKey(owner!, 'organization', privateOrg.id, 'admin'), ownerRow),
    'read',
    'a confined key only reads its own account',
  );
  t.equal(userStanding(withKey(owner!, 'organization', privateOrg.id, 'admin'), botRow), null, 'and nothing else');
});

t.test('the resolvers throw 404 below read and 403 below the need', async (t) => {
  await t.rejects(orgFor(ctx.db, human(stranger!), privateOrg.id, 'read'), { code: 'not_found' });
  await t.rejects(orgFor(ctx.db, human(reader!), privateOrg.alias, 'write'), { code: 'forbidden' });
  t.equal((await orgFor(ctx.db, human(writer!), privateOrg.alias, 'write')).role, 'write');
  await t.rejects(
    blobFor(ctx.db, human(writer!), publicOrg.id, privateBlob.id, 'read'),
    { code: 'not_found' },
    'a blob is found only in its own organization',
  );
  t.equal((await blobFor(ctx.db, human(writer!), privateOrg.alias, privateBlob.alias, 'write')).role, 'write');
  await t.rejects(
    blobFor(ctx.db, withKey(owner!, 'blob', privateBlob.id, 'write'), privateOrg.id, privateBlob.id, 'admin'),
    { code: 'forbidden' },
  );
  const viaRevision = await revisionFor(ctx.db, human(blobMember!), privateBlob.revisionId, 'write');
  t.equal(viaRevision.role, 'write');
  t.equal(viaRevision.blob.id, privateBlob.id);
  t.equal(viaRevision.org.id, privateOrg.id);
  t.match(viaRevision.revision, { id: privateBlob.revisionId, number: 1, created_at: /Z$/ });
  await t.rejects(revisionFor(ctx.db, human(stranger!), privateBlob.revisionId, 'read'), { code: 'not_found' });
  await t.rejects(revisionFor(ctx.db, human(owner!), 'not-a-uuid', 'read'), { code: 'not_found' });
});

t.test('membership roles never reach a response body', async (t) => {
  const { org } = await orgFor(ctx.db, human(writer!), privateOrg.id, 'read');
  t.strictSame(Object.keys(JSON.parse(JSON.stringify(org))).sort(), [
    'alias',
    'created_at',
    'id',
    'name',
    'owner_id',
    'visibility',
  ]);
});

t.test('standing is computed in one query', async (t) => {
  let queries = 0;
  const counting: Queryable = {
    query<R extends QueryResultRow>(text: string, values?: unknown[]) {
      queries++;
      return db.query<R>(text, values);
    },
  };
  for (const [what, run] of [
    ['orgFor', () => orgFor(counting, human(writer!), privateOrg.id, 'read')],
    ['blobFor', () => blobFor(counting, human(reader!), privateOrg.id, privateBlob.id, 'read')],
    ['revisionFor', () => revisionFor(counting, human(reader!), privateBlob.revisionId, 'read')],
    ['a blob target', () => targetStanding(ctx, human(reader!), 'blob', privateBlob.alias, counting)],
  ] as const) {
    queries = 0;
    await run();
    t.equal(queries, 1, what);
  }
});
