import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import t, { type Test } from 'tap';
import { buildTestApp, call } from './helpers/app.ts';
import { generateRsaKey, startIdentityProvider, unsignedToken } from './helpers/jwks.ts';

const idp = await startIdentityProvider(t);
const { app, db } = await buildTestApp(t, idp.env);

async function google(idToken: string) {
  return call(app, 'POST', '/v1/auth/google', { body: { id_token: idToken } });
}

function assertRefused(t: Test, res: { status: number; body: any }) {
  t.equal(res.status, 401);
  t.match(res.body, { status: 'failure', error: 'unauthorized', message: String });
  t.notOk(res.body.access_token, 'no token is issued');
}

t.test('a valid ID token creates the human user once, keyed by issuer and subject', async (t) => {
  const first = await google(
    await idp.sign({ sub: 'alice-sub', email: 'alice@example.com', email_verified: true, name: 'Alice' }),
  );
  t.equal(first.status, 200);
  t.match(first.body, {
    status: 'success',
    user: { id: String, kind: 'human', name: 'Alice', email: 'alice@example.com', anonymous: false, alias: null },
    access_token: String,
    refresh_token: String,
    token_type: 'Bearer',
    expires_in: 900,
  });
  const me = await call(app, 'GET', '/v1/users/me', {
    headers: { authorization: `Bearer ${first.body.access_token}` },
  });
  t.equal(me.status, 200);
  t.equal(me.body.user.id, first.body.user.id, 'the access token authenticates as the new user');

  // The profile is the user's own from now on: a second sign-in does not overwrite the name.
  const renamed = await call(app, 'PATCH', '/v1/users/me', {
    headers: { authorization: `Bearer ${first.body.access_token}` },
    body: { name: 'Alice L.' },
  });
  t.equal(renamed.status, 200);

  const second = await google(await idp.sign({ sub: 'alice-sub', email: 'alice@example.com', name: 'Alice' }));
  t.equal(second.status, 200);
  t.equal(second.body.user.id, first.body.user.id, 'same issuer and subject: same user');
  t.equal(second.body.user.name, 'Alice L.');
  t.not(second.body.refresh_token, first.body.refresh_token, 'each sign-in starts its own refresh family');

  const other = await google(await idp.sign({ sub: 'bob-sub' }));
  t.equal(other.status, 200);
  t.not(other.body.user.id, first.body.user.id, 'another subject is another user');

  const { rows } = await db.query(
    `SELECT count(*)::int AS n FROM users WHERE oidc_subject = 'alice-sub' AND oidc_issuer = $1`,
    [idp.issuer],
  );
  t.equal(rows[0].n, 1);
});

t.test('email is kept only when the provider does not say it is unverified', async (t) => {
  const unverified = await google(
    await idp.sign({ sub: 'carol-sub', email: 'carol@example.com', email_verified: false }),
  );
  t.equal(unverified.status, 200);
  t.equal(unverified.body.user.email, null);

  const unverifiedString = await google(
    await idp.sign({ sub: 'dave-sub', email: 'dave@example.com', email_verified: 'false' }),
  );
  t.equal(unverifiedString.body.user.email, null, 'the string "false" counts as unverified too');

  const silent = await google(await idp.sign({ sub: 'erin-sub', email: 'erin@example.com' }));
  t.equal(silent.body.user.email, 'erin@example.com', 'no email_verified claim: kept');

  const later = await google(await idp.sign({ sub: 'carol-sub', email: 'carol@example.com', email_verified: true }));
  t.equal(later.body.user.id, unverified.body.user.id);
  t.equal(later.body.user.email, 'carol@example.com', 'a later verified email is recorded');

  const noName = await google(await idp.sign({ sub: 'frank-sub' }));
  t.match(noName.body.user, { email: null, name: '' });
});

t.test('each sign-in is its own refresh family: revoking one leaves the other', async (t) => {
  const laptop = await google(await idp.sign({ sub: 'gina-sub' }));
  const phone = await google(await idp.sign({ sub: 'gina-sub' }));
  t.equal(phone.body.user.id, laptop.body.user.id);
  const rotated = await call(app, 'POST', '/v1/auth/refresh', { body: { refresh_token: laptop.body.refresh_token } });
  t.equal(rotated.status, 200);
  t.equal(rotated.body.user.id, laptop.body.user.id);
  const replay = await call(app, 'POST', '/v1/auth/refresh', { body: { refresh_token: laptop.body.refresh_token } });
  assertRefused(t, replay);
  const fromPhone = await call(app, 'POST', '/v1/auth/refresh', { body: { refresh_token: phone.body.refresh_token } });
  t.equal(fromPhone.status, 200, "the other sign-in's family still works");
});

t.test('ID tokens that fail verification are refused with 401', async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const cases: Array<[string, () => Promise<string>]> = [
    ['wrong audience', () => idp.sign({ aud: 'someone-else' })],
    ['audience list without ours', () => idp.sign({ aud: ['a', 'b'] })],
    ['wrong issuer', () => idp.sign({ iss: 'https://evil.example' })],
    ['expired', () => idp.sign({ iat: now - 7200, exp: now - 3600 })],
    ['not yet valid', () => idp.sign({ nbf: now + 3600 })],
    ['no subject', () => idp.sign({ sub: undefined })],
    ['no expiry', () => idp.sign({ exp: undefined })],
    [
      'signed by an unknown key with an unknown kid',
      async () => idp.sign({}, { key: await generateRsaKey(), kid: 'unknown-kid' }),
    ],
    ['signed by another key under the published kid', async () => idp.sign({}, { key: await generateRsaKey() })],
    [
      'alg none',
      async () =>
        unsignedToken({ iss: idp.issuer, aud: idp.audience, sub: 'x', iat: now, exp: now + 600 }, { typ: 'JWT' }),
    ],
    [
      'HS256 with the public key as the secret',
      () =>
        new SignJWT({ iss: idp.issuer, aud: idp.audience, sub: 'x' })
          .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: 'test-key-1' })
          .setIssuedAt()
          .setExpirationTime('10m')
          .sign(new TextEncoder().encode(idp.publicPem)),
    ],
    [
      'payload altered after signing',
      async () => {
        const [h, , s] = (await idp.sign({ sub: 'victim' })).split('.');
        const forged = Buffer.from(
          JSON.stringify({ iss: idp.issuer, aud: idp.audience, sub: 'attacker', iat: now, exp: now + 600 }),
        ).toString('base64url');
        return `${h}.${forged}.${s}`;
      },
    ],
    ['not a JWT', async () => 'definitely-not-a-jwt'],
  ];
  for (const [name, make] of cases) {
    await t.test(name, async (t) => assertRefused(t, await google(await make())));
  }
  const { rows } = await db.query(`SELECT count(*)::int AS n FROM users WHERE oidc_subject IN ('x', 'attacker')`);
  t.equal(rows[0].n, 0, 'no account was created by a refused token');
});

t.test('the body is validated', async (t) => {
  const missing = await call(app, 'POST', '/v1/auth/google', { body: {} });
  t.equal(missing.status, 400);
  t.equal(missing.body.error, 'invalid_request_body');
  const extra = await call(app, 'POST', '/v1/auth/google', { body: { id_token: 'x', nonce: 'y' } });
  t.equal(extra.status, 400);
  t.equal(extra.body.error, 'invalid_request_body');
});

t.test('without a configured audience every ID token is refused', async (t) => {
  const { OIDC_AUDIENCE: _unused, ...withoutAudience } = idp.env;
  const { app: unconfigured } = await buildTestApp(t, withoutAudience);
  const fetchesBefore = idp.fetches;
  const res = await call(unconfigured, 'POST', '/v1/auth/google', { body: { id_token: await idp.sign() } });
  assertRefused(t, res);
  t.equal(idp.fetches, fetchesBefore, 'the provider is not even asked for keys');
});

t.test('an unreachable key set is a server error, not a bad token', async (t) => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const { app: broken } = await buildTestApp(t, { ...idp.env, OIDC_JWKS_URL: `http://127.0.0.1:${port}/jwks` });
  const res = await call(broken, 'POST', '/v1/auth/google', { body: { id_token: await idp.sign() } });
  t.equal(res.status, 500);
  t.match(res.body, { status: 'failure', error: 'internal_error' });
});

t.test("Google's issuer is accepted in both of its documented forms", async (t) => {
  const google = await startIdentityProvider(t, { issuer: 'https://accounts.google.com' });
  const { app: googleApp } = await buildTestApp(t, google.env);
  const withScheme = await call(googleApp, 'POST', '/v1/auth/google', {
    body: { id_token: await google.sign({ sub: 'g-1' }) },
  });
  t.equal(withScheme.status, 200);
  const bare = await call(googleApp, 'POST', '/v1/auth/google', {
    body: { id_token: await google.sign({ sub: 'g-1', iss: 'accounts.google.com' }) },
  });
  t.equal(bare.status, 200);
  t.equal(bare.body.user.id, withScheme.body.user.id, 'both forms name the same account');
  const lookalike = await call(googleApp, 'POST', '/v1/auth/google', {
    body: { id_token: await google.sign({ sub: 'g-1', iss: 'http://accounts.google.com' }) },
  });
  t.equal(lookalike.status, 401);
});
