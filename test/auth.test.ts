import { generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import t, { type Test } from 'tap';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { unsignedToken } from './helpers/jwks.ts';

const { app, db, config } = await buildTestApp(t);
const ownKey = new TextEncoder().encode(config.secrets.TOKEN_SIGNING_KEY);

const ACCESS = { typ: 'at+jwt', aud: 'workspace-service:access' };
const ACTING = { typ: 'act+jwt', aud: 'workspace-service:acting' };

interface ForgeOptions {
  typ?: string | undefined;
  alg?: string;
  key?: Uint8Array | CryptoKey;
}

/** Signs a token of our shape with full control over header and claims. */
async function forge(claims: JWTPayload, options: ForgeOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const header: Record<string, unknown> = { alg: options.alg ?? 'HS256' };
  if (options.typ !== undefined) header.typ = options.typ;
  return new SignJWT({ iss: 'workspace-service', aud: ACCESS.aud, iat: now, exp: now + 600, ...claims })
    .setProtectedHeader(header as { alg: string })
    .sign(options.key ?? ownKey);
}

async function me(token: string) {
  return call(app, 'GET', '/v1/users/me', { headers: { authorization: `Bearer ${token}` } });
}

function assertUnauthorized(t: Test, res: { status: number; body: any }, what = 'refused') {
  t.equal(res.status, 401, what);
  t.match(res.body, { status: 'failure', error: 'unauthorized', message: String }, `${what}: the failure envelope`);
}

async function createServiceAccount(ownerId: string, alias?: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO users (kind, name, owner_id, alias) VALUES ('service', 'bot', $1::uuid, $2) RETURNING id`,
    [ownerId, alias ?? null],
  );
  return rows[0]!.id;
}

t.test('access tokens', async (t) => {
  const alice = await signInAnonymous(app);

  await t.test('a genuine token and a forged one that copies it exactly both work (control)', async (t) => {
    const genuine = await me(alice.token);
    t.equal(genuine.status, 200);
    t.equal(genuine.body.user.id, alice.user.id);
    const copy = await me(await forge({ sub: alice.user.id }, { typ: ACCESS.typ }));
    t.equal(copy.status, 200, 'the forge helper builds valid tokens when nothing is wrong');
  });

  const now = Math.floor(Date.now() / 1000);
  const sub = alice.user.id;
  const cases: Array<[string, () => Promise<string>]> = [
    [
      'signed with another key',
      () =>
        forge({ sub }, { typ: ACCESS.typ, key: new TextEncoder().encode('another-key-0123456789abcdef0123456789') }),
    ],
    [
      'payload byte changed after signing',
      async () => {
        const [h, p, s] = alice.token.split('.') as [string, string, string];
        const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
        payload.exp += 1;
        return `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}`;
      },
    ],
    [
      'signature byte changed',
      async () => {
        const [h, p, s] = alice.token.split('.') as [string, string, string];
        const sig = Buffer.from(s, 'base64url');
        sig[0] = sig[0]! ^ 1;
        return `${h}.${p}.${sig.toString('base64url')}`;
      },
    ],
    ['expired', () => forge({ sub, iat: now - 3600, exp: now - 60 }, { typ: ACCESS.typ })],
    ['not yet valid', () => forge({ sub, nbf: now + 3600 }, { typ: ACCESS.typ })],
    [
      'alg none',
      async () =>
        unsignedToken(
          { iss: 'workspace-service', aud: ACCESS.aud, sub, iat: now, exp: now + 600 },
          { typ: ACCESS.typ },
        ),
    ],
    ['HS512 with our own key', () => forge({ sub }, { typ: ACCESS.typ, alg: 'HS512' })],
    [
      'RS256 (algorithm confusion)',
      async () => {
        const { privateKey } = await generateKeyPair('RS256');
        return forge({ sub }, { typ: ACCESS.typ, alg: 'RS256', key: privateKey });
      },
    ],
    ['wrong issuer', () => forge({ sub, iss: 'someone-else' }, { typ: ACCESS.typ })],
    ['missing issuer', () => forge({ sub, iss: undefined }, { typ: ACCESS.typ })],
    ['missing sub', () => forge({}, { typ: ACCESS.typ })],
    ['sub that is not a UUID', () => forge({ sub: 'not-a-uuid' }, { typ: ACCESS.typ })],
    ['missing exp', () => forge({ sub, exp: undefined }, { typ: ACCESS.typ })],
    ['missing typ', () => forge({ sub })],
    ['generic typ JWT', () => forge({ sub }, { typ: 'JWT' })],
    ['access typ with the acting audience', () => forge({ sub, aud: ACTING.aud }, { typ: ACCESS.typ })],
    ['access token carrying an act claim', () => forge({ sub, act: { sub } }, { typ: ACCESS.typ })],
    ['a refresh token presented as a bearer token', async () => alice.refreshToken],
    ['three dots of nothing', async () => '..'],
  ];
  for (const [name, make] of cases) {
    await t.test(`refused: ${name}`, async (t) => assertUnauthorized(t, await me(await make())));
  }
});

t.test('acting tokens and access tokens do not stand in for each other', async (t) => {
  const owner = await signInAnonymous(app);
  const stranger = await signInAnonymous(app);
  const bot = await createServiceAccount(owner.user.id);
  const tokens = app.ctx.tokens;

  const acting = await tokens.signActing(bot, owner.user.id);
  const good = await me(acting);
  t.equal(good.status, 200, 'control: the acting token authenticates as the service account');
  t.match(good.body.user, { id: bot, kind: 'service', owner_id: owner.user.id });

  assertUnauthorized(t, await me(await tokens.signAccess(bot)), 'an access token cannot name a service account');
  assertUnauthorized(
    t,
    await me(await tokens.signActing(owner.user.id, owner.user.id)),
    'an acting token cannot name a human',
  );
  assertUnauthorized(
    t,
    await me(await tokens.signActing(bot, stranger.user.id)),
    'an acting token naming a human who does not own the service account',
  );

  const now = Math.floor(Date.now() / 1000);
  // Re-labelled tokens: a valid signature over the wrong kind's header or audience.
  assertUnauthorized(
    t,
    await me(await forge({ sub: bot, aud: ACTING.aud, act: { sub: owner.user.id } }, { typ: ACCESS.typ })),
  );
  assertUnauthorized(
    t,
    await me(await forge({ sub: owner.user.id, aud: ACCESS.aud, act: { sub: owner.user.id } }, { typ: ACTING.typ })),
  );
  assertUnauthorized(t, await me(await forge({ sub: owner.user.id, aud: ACCESS.aud }, { typ: ACTING.typ })));
  assertUnauthorized(
    t,
    await me(await forge({ sub: bot, aud: ACTING.aud }, { typ: ACTING.typ })),
    'acting token without act.sub',
  );
  assertUnauthorized(
    t,
    await me(await forge({ sub: bot, aud: ACTING.aud, act: { sub: 'nobody' } }, { typ: ACTING.typ })),
  );
  assertUnauthorized(
    t,
    await me(
      await forge({ sub: bot, aud: ACTING.aud, act: { sub: owner.user.id }, exp: now - 1 }, { typ: ACTING.typ }),
    ),
  );
  assertUnauthorized(
    t,
    await me(
      await forge({ sub: bot, aud: ACTING.aud, act: { sub: owner.user.id } }, { typ: ACTING.typ, alg: 'HS384' }),
    ),
  );

  const control = await me(
    await forge({ sub: bot, aud: ACTING.aud, act: { sub: owner.user.id } }, { typ: ACTING.typ }),
  );
  t.equal(control.status, 200, 'control: a well-formed acting token from the forge helper works');
});

t.test('credential headers', async (t) => {
  const alice = await signInAnonymous(app);
  const cases: Array<[string, Record<string, string>]> = [
    ['no credential', {}],
    ['Authorization and X-API-Key at once', { authorization: `Bearer ${alice.token}`, 'x-api-key': 'wsk_something' }],
    ['Authorization and an empty X-API-Key', { authorization: `Bearer ${alice.token}`, 'x-api-key': '' }],
    ['Basic scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ['Bearer without a token', { authorization: 'Bearer' }],
    ['Bearer with two tokens', { authorization: `Bearer ${alice.token} ${alice.token}` }],
    ['token without the scheme', { authorization: alice.token }],
    ['empty Authorization', { authorization: '' }],
    ['unknown API key', { 'x-api-key': 'wsk_unknown' }],
  ];
  for (const [name, headers] of cases) {
    await t.test(name, async (t) => assertUnauthorized(t, await call(app, 'GET', '/v1/users/me', { headers })));
  }
  const lower = await call(app, 'GET', '/v1/users/me', { headers: { authorization: `bearer ${alice.token}` } });
  t.equal(lower.status, 200, 'the scheme name is case-insensitive (RFC 9110)');
});

t.test('the token of a deleted user stops working at once', async (t) => {
  const gone = await signInAnonymous(app);
  t.equal((await me(gone.token)).status, 200);
  await db.query('DELETE FROM users WHERE id = $1::uuid', [gone.user.id]);
  assertUnauthorized(t, await me(gone.token));
  const refresh = await call(app, 'POST', '/v1/auth/refresh', { body: { refresh_token: gone.refreshToken } });
  assertUnauthorized(t, refresh);
});

t.test('the acting token of a retired service account stops working', async (t) => {
  const owner = await signInAnonymous(app);
  const bot = await createServiceAccount(owner.user.id);
  const acting = await app.ctx.tokens.signActing(bot, owner.user.id);
  t.equal((await me(acting)).status, 200);
  await db.query('DELETE FROM users WHERE id = $1::uuid', [bot]);
  assertUnauthorized(t, await me(acting));
});

async function refresh(token: string) {
  return call(app, 'POST', '/v1/auth/refresh', { body: { refresh_token: token } });
}

t.test('refresh rotates the token', async (t) => {
  const alice = await signInAnonymous(app);
  const first = await refresh(alice.refreshToken);
  t.equal(first.status, 200);
  t.match(first.body, {
    status: 'success',
    user: { id: alice.user.id, anonymous: true },
    access_token: String,
    refresh_token: String,
    token_type: 'Bearer',
    expires_in: 900,
  });
  t.not(first.body.refresh_token, alice.refreshToken);
  t.equal((await me(first.body.access_token)).body.user.id, alice.user.id, 'the new access token works');

  const second = await refresh(first.body.refresh_token);
  t.equal(second.status, 200, 'the new refresh token works');
});

t.test('replaying a rotated refresh token revokes its whole family, and only it', async (t) => {
  const bob = await signInAnonymous(app);
  const alice = await signInAnonymous(app);
  const r2 = (await refresh(alice.refreshToken)).body.refresh_token as string;
  const r3 = await refresh(r2);
  t.equal(r3.status, 200);

  assertUnauthorized(t, await refresh(r2), 'the replayed token is refused');
  assertUnauthorized(t, await refresh(r3.body.refresh_token), 'the newest token of the family was revoked with it');
  const live = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM refresh_tokens WHERE user_id = $1::uuid AND revoked_at IS NULL',
    [alice.user.id],
  );
  t.equal(live.rows[0]!.n, 0, 'every token of the family is revoked');

  t.equal((await refresh(bob.refreshToken)).status, 200, 'other families are unaffected');
});

t.test('after a replay the newest token of the family stops working', async (t) => {
  const alice = await signInAnonymous(app);
  const r2 = (await refresh(alice.refreshToken)).body.refresh_token as string;
  const r3 = (await refresh(r2)).body.refresh_token as string;
  assertUnauthorized(t, await refresh(alice.refreshToken));
  assertUnauthorized(t, await refresh(r3));
  assertUnauthorized(t, await refresh(r2));
});

t.test('replay revokes the family even when the replayed token was the first of it', async (t) => {
  const carol = await signInAnonymous(app);
  const next = await refresh(carol.refreshToken);
  t.equal(next.status, 200);
  assertUnauthorized(t, await refresh(carol.refreshToken));
  assertUnauthorized(t, await refresh(next.body.refresh_token));
});

t.test('unknown and malformed refresh tokens are refused', async (t) => {
  assertUnauthorized(t, await refresh('wsr_' + 'A'.repeat(43)));
  assertUnauthorized(t, await refresh('anything'));
  const alice = await signInAnonymous(app);
  assertUnauthorized(t, await refresh(alice.token), 'an access token is not a refresh token');
  const empty = await refresh('');
  t.equal(empty.status, 400);
  t.equal(empty.body.error, 'invalid_request_body');
  const extra = await call(app, 'POST', '/v1/auth/refresh', {
    body: { refresh_token: alice.refreshToken, scope: 'all' },
  });
  t.equal(extra.status, 400);
  t.equal(extra.body.error, 'invalid_request_body');
  t.equal((await refresh(alice.refreshToken)).status, 200, 'the refused requests did not consume the token');
});

t.test('an expired refresh token is refused', async (t) => {
  const { app: shortLived } = await buildTestApp(t, { REFRESH_TOKEN_SECONDS: '0' });
  const signIn = await call(shortLived, 'POST', '/v1/auth/anonymous', { body: {} });
  t.equal(signIn.status, 200);
  const res = await call(shortLived, 'POST', '/v1/auth/refresh', {
    body: { refresh_token: signIn.body.refresh_token },
  });
  assertUnauthorized(t, res);
});

t.test('expired links of a family are pruned on rotation', async (t) => {
  const frank = await signInAnonymous(app);
  const r2 = (await refresh(frank.refreshToken)).body.refresh_token as string;
  // Age the rotated first link past its expiry (30 days would be a long test).
  await db.query(
    `UPDATE refresh_tokens SET expires_at = now() - interval '1 day' WHERE user_id = $1::uuid AND rotated_at IS NOT NULL`,
    [frank.user.id],
  );
  t.equal((await refresh(r2)).status, 200);
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM refresh_tokens WHERE user_id = $1::uuid',
    [frank.user.id],
  );
  t.equal(rows[0]!.n, 2, 'the expired link is gone; the rotated r2 and the new token remain');
  assertUnauthorized(t, await refresh(frank.refreshToken), 'the pruned token is refused');
  assertUnauthorized(t, await refresh(r2), 'replaying r2 is still detected');
});

t.test('concurrent refreshes of one token never both succeed', async (t) => {
  // Open the pool's connections first, so the requests below really overlap in the database
  // instead of queueing behind connection set-up.
  await Promise.all(Array.from({ length: 6 }, () => db.pool.query('SELECT pg_sleep(0.01)')));
  for (let round = 0; round < 10; round += 1) {
    const dave = await signInAnonymous(app);
    const results = await Promise.all([1, 2, 3].map(() => refresh(dave.refreshToken)));
    const statuses = results.map((r) => r.status).sort();
    t.same(statuses, [200, 401, 401], `round ${round}: one wins, the others are refused`);
    const winner = results.find((r) => r.status === 200);
    // A loser is indistinguishable from a thief racing the client: the family is revoked.
    if (winner)
      assertUnauthorized(
        t,
        await refresh(winner.body.refresh_token),
        `round ${round}: the winner's new token was revoked with the family`,
      );
  }
});

t.test('an access token keeps working after its refresh family is revoked, until it expires', async (t) => {
  const erin = await signInAnonymous(app);
  const next = await refresh(erin.refreshToken);
  assertUnauthorized(t, await refresh(erin.refreshToken));
  t.equal((await me(next.body.access_token)).status, 200, 'access tokens are stateless (documented in docs/auth.md)');
});

t.test('an access token lifetime comes from ACCESS_TOKEN_SECONDS', async (t) => {
  const { app: zero } = await buildTestApp(t, { ACCESS_TOKEN_SECONDS: '0' });
  const signIn = await call(zero, 'POST', '/v1/auth/anonymous', { body: {} });
  t.equal(signIn.body.expires_in, 0);
  const res = await call(zero, 'GET', '/v1/users/me', {
    headers: { authorization: `Bearer ${signIn.body.access_token}` },
  });
  assertUnauthorized(t, res, 'a token whose exp is now is already expired');
});
