import t from 'tap';
import { buildTestApp, call, signInAnonymous, type Caller } from './helpers/app.ts';
import { startIdentityProvider } from './helpers/jwks.ts';

const idp = await startIdentityProvider(t);
const { app, db } = await buildTestApp(t, idp.env);

/** A human signed in through the identity provider, so the profile has an email. */
async function signInWithEmail(sub: string, email: string): Promise<Caller> {
  const res = await call(app, 'POST', '/v1/auth/google', {
    body: { id_token: await idp.sign({ sub, email, name: sub }) },
  });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status}`);
  return {
    user: res.body.user,
    token: res.body.access_token,
    refreshToken: res.body.refresh_token,
    headers: { authorization: `Bearer ${res.body.access_token}` },
  };
}

// Organizations are seeded directly: this file tests the user listing, not organization creation.
async function seedOrg(ownerId: string, alias: string, visibility: 'public' | 'private'): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO orgs (alias, name, visibility, owner_id) VALUES ($1, $1, $2, $3::uuid) RETURNING id`,
    [alias, visibility, ownerId],
  );
  return rows[0]!.id;
}

async function seedServiceAccount(ownerId: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (kind, name, owner_id) VALUES ('service', 'bot', $1::uuid) RETURNING id`,
    [ownerId],
  );
  return rows[0]!.id;
}

const PUBLIC_FIELDS = ['alias', 'created_at', 'id', 'kind', 'name'];

t.test('GET /users/:id shows the full profile to the user itself', async (t) => {
  const alice = await signInWithEmail('alice', 'alice@example.com');
  for (const ref of ['me', alice.user.id]) {
    const { status, body } = await call(app, 'GET', `/v1/users/${ref}`, { as: alice });
    t.equal(status, 200, ref);
    t.same(
      body,
      {
        status: 'success',
        user: {
          id: alice.user.id,
          alias: null,
          name: 'alice',
          kind: 'human',
          created_at: alice.user.created_at,
          email: 'alice@example.com',
          anonymous: false,
        },
      },
      `${ref}: full profile`,
    );
  }
});

t.test('GET /users/:id shows only public fields of another user', async (t) => {
  const alice = await signInWithEmail('alice2', 'alice2@example.com');
  const bob = await signInAnonymous(app);
  const { status, body } = await call(app, 'GET', `/v1/users/${alice.user.id}`, { as: bob });
  t.equal(status, 200);
  t.same(Object.keys(body.user).sort(), PUBLIC_FIELDS);
  t.match(body.user, { id: alice.user.id, name: 'alice2', kind: 'human' });
  t.notOk('email' in body.user, 'no email');
  t.notOk('anonymous' in body.user, 'no anonymous flag');
});

t.test("a service account's profile: owner_id for itself, public fields for its owner", async (t) => {
  const owner = await signInAnonymous(app);
  const bot = await seedServiceAccount(owner.user.id);
  const acting = { authorization: `Bearer ${await app.ctx.tokens.signActing(bot, owner.user.id)}` };

  const self = await call(app, 'GET', '/v1/users/me', { headers: acting });
  t.equal(self.status, 200, '`me` works under an acting token');
  t.match(self.body.user, { id: bot, kind: 'service', owner_id: owner.user.id, anonymous: false, email: null });

  const byOwner = await call(app, 'GET', `/v1/users/${bot}`, { as: owner });
  t.equal(byOwner.status, 200);
  t.same(Object.keys(byOwner.body.user).sort(), PUBLIC_FIELDS);
});

t.test('a missing user is 404; an upper-case UUID is an alias, so it is 404 too', async (t) => {
  const alice = await signInAnonymous(app);
  const missing = await call(app, 'GET', '/v1/users/00000000-0000-4000-8000-000000000000', { as: alice });
  t.equal(missing.status, 404);
  t.match(missing.body, { status: 'failure', error: 'not_found' });

  const upper = await call(app, 'GET', `/v1/users/${alice.user.id.toUpperCase()}`, { as: alice });
  t.equal(upper.status, 404, 'the upper-case form of an existing id names no user');
  t.equal(upper.body.error, 'not_found');

  const unknownAlias = await call(app, 'GET', '/v1/users/no-such-alias', { as: alice });
  t.equal(unknownAlias.status, 404);
});

t.test('user routes need a credential', async (t) => {
  const alice = await signInAnonymous(app);
  for (const [method, url] of [
    ['GET', '/v1/users/me'],
    ['GET', `/v1/users/${alice.user.id}`],
    ['PATCH', '/v1/users/me'],
    ['GET', '/v1/users/me/orgs'],
  ] as const) {
    const res = await call(app, method, url, method === 'PATCH' ? { body: { name: 'x' } } : {});
    t.equal(res.status, 401, `${method} ${url}`);
    t.equal(res.body.error, 'unauthorized');
  }
});

t.test("PATCH /users/:id changes the caller's own name and alias", async (t) => {
  const alice = await signInWithEmail('alice3', 'alice3@example.com');
  const res = await call(app, 'PATCH', '/v1/users/me', {
    as: alice,
    body: { name: '  Alice Liddell  ', alias: 'alice.liddell' },
  });
  t.equal(res.status, 200);
  t.match(res.body, {
    status: 'success',
    user: { id: alice.user.id, name: 'Alice Liddell', alias: 'alice.liddell', email: 'alice3@example.com' },
  });

  const byAlias = await call(app, 'GET', '/v1/users/alice.liddell', { as: alice });
  t.equal(byAlias.status, 200, 'the alias addresses the user');
  t.equal(byAlias.body.user.id, alice.user.id);

  const byIdPatch = await call(app, 'PATCH', `/v1/users/${alice.user.id}`, { as: alice, body: { name: 'A.' } });
  t.equal(byIdPatch.status, 200);
  t.match(byIdPatch.body.user, { name: 'A.', alias: 'alice.liddell' }, 'fields left out keep their value');

  const byAliasPatch = await call(app, 'PATCH', '/v1/users/alice.liddell', { as: alice, body: { alias: 'alice-l' } });
  t.equal(byAliasPatch.status, 200);
  t.equal(byAliasPatch.body.user.alias, 'alice-l');
  t.equal(
    (await call(app, 'GET', '/v1/users/alice.liddell', { as: alice })).status,
    404,
    'the old alias is free again',
  );

  const same = await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { alias: 'alice-l' } });
  t.equal(same.status, 200, "setting one's own alias again is not a conflict");

  const cleared = await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { alias: null } });
  t.equal(cleared.status, 200);
  t.equal(cleared.body.user.alias, null, 'alias: null removes the alias');

  const empty = await call(app, 'PATCH', '/v1/users/me', { as: alice, body: {} });
  t.equal(empty.status, 200);
  t.match(empty.body.user, { name: 'A.', alias: null });
});

t.test('PATCH on another user is 403 when it exists and 404 when it does not', async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  await call(app, 'PATCH', '/v1/users/me', { as: bob, body: { alias: 'bob-the-user' } });
  for (const ref of [bob.user.id, 'bob-the-user']) {
    const res = await call(app, 'PATCH', `/v1/users/${ref}`, { as: alice, body: { name: 'pwned' } });
    t.equal(res.status, 403, ref);
    t.match(res.body, { status: 'failure', error: 'forbidden' });
  }
  const invalidBodyToo = await call(app, 'PATCH', `/v1/users/${bob.user.id}`, { as: alice, body: { alias: 'X' } });
  t.equal(invalidBodyToo.status, 403, 'authorization is decided before the body is read');

  const missing = await call(app, 'PATCH', '/v1/users/00000000-0000-4000-8000-000000000000', {
    as: alice,
    body: { name: 'x' },
  });
  t.equal(missing.status, 404);
  t.equal(missing.body.error, 'not_found');
  const missingAlias = await call(app, 'PATCH', '/v1/users/nobody-here', { as: alice, body: { name: 'x' } });
  t.equal(missingAlias.status, 404);

  const bobNow = await call(app, 'GET', '/v1/users/me', { as: bob });
  t.equal(bobNow.body.user.name, 'Anonymous', 'nothing changed');
});

t.test('the owner of a service account may not PATCH it with its own token', async (t) => {
  const owner = await signInAnonymous(app);
  const bot = await seedServiceAccount(owner.user.id);
  const res = await call(app, 'PATCH', `/v1/users/${bot}`, { as: owner, body: { name: 'renamed' } });
  t.equal(res.status, 403);
  t.equal(res.body.error, 'forbidden');

  const acting = { authorization: `Bearer ${await app.ctx.tokens.signActing(bot, owner.user.id)}` };
  const asBot = await call(app, 'PATCH', '/v1/users/me', { headers: acting, body: { name: 'renamed' } });
  t.equal(asBot.status, 200, 'acting as the service account, `me` is the service account');
  t.match(asBot.body.user, { id: bot, name: 'renamed', owner_id: owner.user.id });
});

t.test('PATCH body validation', async (t) => {
  const alice = await signInAnonymous(app);
  const bad: Array<[string, unknown]> = [
    ['unknown field', { email: 'x@example.com' }],
    ['kind cannot be changed', { kind: 'service' }],
    ['empty name', { name: '' }],
    ['blank name', { name: '   ' }],
    ['name too long', { name: 'n'.repeat(201) }],
    ['name not a string', { name: 5 }],
    ['alias not a string', { alias: 5 }],
  ];
  for (const [name, body] of bad) {
    const res = await call(app, 'PATCH', '/v1/users/me', { as: alice, body });
    t.equal(res.status, 400, name);
    t.equal(res.body.error, 'invalid_request_body', name);
  }
  const ok = await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { name: 'n'.repeat(200) } });
  t.equal(ok.status, 200, 'a 200-character name is accepted');
});

t.test('an alias used by another user is 409 alias_taken', async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  t.equal((await call(app, 'PATCH', '/v1/users/me', { as: alice, body: { alias: 'popular' } })).status, 200);
  const taken = await call(app, 'PATCH', '/v1/users/me', { as: bob, body: { alias: 'popular', name: 'Bob' } });
  t.equal(taken.status, 409);
  t.match(taken.body, { status: 'failure', error: 'alias_taken', message: String });
  const bobNow = await call(app, 'GET', '/v1/users/me', { as: bob });
  t.match(bobNow.body.user, { alias: null, name: 'Anonymous' }, 'the refused PATCH changed nothing');

  const race = await Promise.all([
    call(app, 'PATCH', '/v1/users/me', { as: alice, body: { alias: 'contested' } }),
    call(app, 'PATCH', '/v1/users/me', { as: bob, body: { alias: 'contested' } }),
  ]);
  t.same(race.map((r) => r.status).sort(), [200, 409], 'two users racing for one alias: one gets it');
});

t.test('GET /users/:id/orgs lists owned organizations by visibility', async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  const pub = await seedOrg(alice.user.id, 'alice-public', 'public');
  const priv = await seedOrg(alice.user.id, 'alice-private', 'private');
  await seedOrg(bob.user.id, 'bob-public', 'public');

  const self = await call(app, 'GET', '/v1/users/me/orgs', { as: alice });
  t.equal(self.status, 200);
  t.equal(self.body.status, 'success');
  t.same(self.body.orgs.map((o: { id: string }) => o.id).sort(), [pub, priv].sort(), 'self sees public and private');
  t.match(
    self.body.orgs.find((o: { id: string }) => o.id === priv),
    {
      id: priv,
      alias: 'alice-private',
      name: 'alice-private',
      visibility: 'private',
      owner_id: alice.user.id,
      created_at: String,
    },
  );
  t.notOk('cursor' in self.body, 'unpaginated');

  const byId = await call(app, 'GET', `/v1/users/${alice.user.id}/orgs`, { as: alice });
  t.equal(byId.body.orgs.length, 2, 'self by id sees the same');

  const other = await call(app, 'GET', `/v1/users/${alice.user.id}/orgs`, { as: bob });
  t.equal(other.status, 200);
  t.same(
    other.body.orgs.map((o: { id: string }) => o.id),
    [pub],
    'another user sees public only',
  );

  const none = await call(app, 'GET', '/v1/users/me/orgs', { as: await signInAnonymous(app) });
  t.same(none.body, { status: 'success', orgs: [] });

  const missing = await call(app, 'GET', '/v1/users/00000000-0000-4000-8000-000000000000/orgs', { as: alice });
  t.equal(missing.status, 404);
  t.equal(missing.body.error, 'not_found');
});

t.test("a service account's orgs: its owner sees only public ones", async (t) => {
  const owner = await signInAnonymous(app);
  const bot = await seedServiceAccount(owner.user.id);
  const pub = await seedOrg(bot, 'bot-public', 'public');
  const priv = await seedOrg(bot, 'bot-private', 'private');
  const byOwner = await call(app, 'GET', `/v1/users/${bot}/orgs`, { as: owner });
  t.same(
    byOwner.body.orgs.map((o: { id: string }) => o.id),
    [pub],
  );
  const acting = { authorization: `Bearer ${await app.ctx.tokens.signActing(bot, owner.user.id)}` };
  const self = await call(app, 'GET', '/v1/users/me/orgs', { headers: acting });
  t.same(self.body.orgs.map((o: { id: string }) => o.id).sort(), [pub, priv].sort());
});
