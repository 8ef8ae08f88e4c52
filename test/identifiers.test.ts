import t from 'tap';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';

const { app, db } = await buildTestApp(t);

t.test('user aliases follow the grammar when set', async (t) => {
  const alice = await signInAnonymous(app);
  const accepted = [
    'abc',
    '0ab',
    'a.b',
    'a_b',
    'a-b',
    'a'.repeat(64),
    'user.name_with-all.3',
    // Not UUID-shaped: one hex group too short, or a non-hex letter, or no dashes.
    '0123456-89ab-4def-8123-456789abcdef',
    '0123456g-89ab-4def-8123-456789abcdef',
    '0123456789ab4def8123456789abcdef',
  ];
  for (const alias of accepted) {
    const res = await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { alias } });
    t.equal(res.status, 200, `accepted: ${alias}`);
    t.equal(res.body.user.alias, alias);
    const read = await call(app, 'GET', `/v1/users/${alias}`, { as: alice });
    t.equal(read.body.user?.id, alice.user.id, `addressable: ${alias}`);
  }

  const refused = [
    ['too short', 'ab'],
    ['too long', 'a'.repeat(65)],
    ['empty', ''],
    ['upper case', 'Alice'],
    ['starts with a dash', '-abc'],
    ['starts with a dot', '.abc'],
    ['starts with an underscore', '_abc'],
    ['space', 'a b c'],
    ['slash', 'a/b/c'],
    ['non-ASCII', 'ålice'],
    ['reserved `me`', 'me'],
    ['UUID-shaped', '0123abcd-89ab-4def-8123-456789abcdef'],
    ['UUID-shaped, all digits', '01234567-0123-0123-0123-012345678901'],
    ['UUID-shaped, upper case', '0123ABCD-89AB-4DEF-8123-456789ABCDEF'],
  ];
  for (const [why, alias] of refused) {
    const res = await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { alias } });
    t.equal(res.status, 400, `refused (${why}): ${alias}`);
    t.match(res.body, { status: 'failure', error: 'invalid_request_body', message: String });
  }
  const still = await call(app, 'GET', '/v1/users/me', { as: alice });
  t.equal(still.body.user.alias, accepted.at(-1), 'refused aliases changed nothing');
});

t.test("a UUID-shaped alias cannot be taken even if it is nobody's id", async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  const res = await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { alias: bob.user.id } });
  t.equal(res.status, 400, "another user's id as an alias");
  t.equal(res.body.error, 'invalid_request_body');
  const own = await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { alias: alice.user.id } });
  t.equal(own.status, 400, "one's own id as an alias");
});

t.test('only a canonical lower-case UUID is matched against ids', async (t) => {
  const alice = await signInAnonymous(app);
  const upper = alice.user.id.toUpperCase();
  t.equal((await call(app, 'GET', `/v1/users/${alice.user.id}`, { as: alice })).status, 200);
  const res = await call(app, 'GET', `/v1/users/${upper}`, { as: alice });
  t.equal(res.status, 404, 'the upper-case form is looked up as an alias');
  t.equal(res.body.error, 'not_found');

  // A stored alias that is the upper-case form of a UUID (it predates the grammar, so it is
  // seeded directly) is found through the alias column: the read path never validates.
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (kind, name, alias) VALUES ('human', 'legacy', $1) RETURNING id`,
    [upper],
  );
  const legacy = await call(app, 'GET', `/v1/users/${upper}`, { as: alice });
  t.equal(legacy.status, 200);
  t.equal(legacy.body.user.id, rows[0]!.id, 'the alias, not the id it resembles, decides');
});

t.test('reads never apply the alias grammar', async (t) => {
  const alice = await signInAnonymous(app);
  for (const ref of ['A', 'ab', 'Bad Alias', '-x-', '0123abcd-89ab-4def-8123-456789abcdeF']) {
    const res = await call(app, 'GET', `/v1/users/${encodeURIComponent(ref)}`, { as: alice });
    t.equal(res.status, 404, `${ref}: 404, not 400`);
    t.equal(res.body.error, 'not_found');
  }
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (kind, name, alias) VALUES ('human', 'old', 'Old_Name') RETURNING id`,
  );
  const old = await call(app, 'GET', '/v1/users/Old_Name', { as: alice });
  t.equal(old.status, 200, "an alias outside today's grammar still resolves");
  t.equal(old.body.user.id, rows[0]!.id);
});

t.test('`me` is the caller, resolved before any authorization check', async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  t.equal((await call(app, 'GET', '/v1/users/me', { as: bob })).body.user.id, bob.user.id);
  const patch = await call(app, 'PATCH', '/v1/users/me', { as: bob, body: { name: 'Bob' } });
  t.equal(patch.status, 200, 'PATCH me is always self');
  t.equal(patch.body.user.id, bob.user.id);
  t.equal((await call(app, 'GET', '/v1/users/me', { as: alice })).body.user.name, 'Anonymous', 'alice untouched');

  const meUpper = await call(app, 'GET', '/v1/users/ME', { as: bob });
  t.equal(meUpper.status, 404, '`ME` is not `me`: it is an alias nobody can hold');
});
