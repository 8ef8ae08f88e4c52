import { decodeJwt, decodeProtectedHeader } from 'jose';
import t from 'tap';
import { createTokenService } from '../control-plane/auth/tokens.ts';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';
import { actAs, apiKey, bearer, createOrg, createServiceAccount, mintKey } from './helpers/accounts.ts';

const { app, db, config } = await buildTestApp(t);

t.test('the owner mints a 60-minute acting token that authenticates as the service account', async (t) => {
  const alice = await signInAnonymous(app);
  const bot = await createServiceAccount(app, alice.headers, 'bot', 'acting-bot');
  const { status, body } = await call(app, 'POST', '/v1/auth/core/impersonate', {
    as: alice,
    body: { user_id: 'acting-bot' },
  });
  t.equal(status, 200);
  t.same(Object.keys(body).sort(), ['acting_token', 'expires_in', 'status', 'token_type', 'user'], 'no refresh token');
  t.match(body, {
    status: 'success',
    token_type: 'Bearer',
    expires_in: 3600,
    user: { id: bot.id, kind: 'service', owner_id: alice.user.id },
  });

  const claims = decodeJwt(body.acting_token);
  t.equal(decodeProtectedHeader(body.acting_token).typ, 'act+jwt');
  t.equal(claims.sub, bot.id);
  t.same(claims.act, { sub: alice.user.id });
  // iat and exp are read from the clock a moment apart, so a second may tick between them.
  t.ok([3600, 3601].includes(claims.exp! - claims.iat!), 'lasts 60 minutes');

  const me = await call(app, 'GET', '/v1/users/me', { headers: bearer(body.acting_token) });
  t.equal(me.status, 200);
  t.equal(me.body.user.id, bot.id, 'authenticates as the service account');
});

t.test('who may impersonate whom', async (t) => {
  const alice = await signInAnonymous(app);
  const mallory = await signInAnonymous(app);
  const bot = await createServiceAccount(app, alice.headers);
  const botKey = await mintKey(app, alice.headers, 'user', bot.id, 'admin');
  const readKey = await mintKey(app, alice.headers, 'user', alice.user.id, 'read');
  const adminKey = await mintKey(app, alice.headers, 'user', alice.user.id, 'admin');
  const org = await createOrg(app, alice.headers, 'impersonate-org');
  const orgKey = await mintKey(app, alice.headers, 'organization', org.id, 'admin');

  const cases: Array<[string, Record<string, string>, unknown, number, string | null]> = [
    ['another human', mallory.headers, { user_id: bot.id }, 403, 'forbidden'],
    ["the service account's own admin key", apiKey(botKey.key), { user_id: bot.id }, 403, 'forbidden'],
    ['a human target', alice.headers, { user_id: mallory.user.id }, 400, 'invalid_request_body'],
    ['oneself', alice.headers, { user_id: 'me' }, 400, 'invalid_request_body'],
    ['no such user', alice.headers, { user_id: 'no-such-account' }, 404, 'not_found'],
    ['a bad body', alice.headers, { user_id: bot.id, extra: true }, 400, 'invalid_request_body'],
    ["the owner's read key (capped)", apiKey(readKey.key), { user_id: bot.id }, 403, 'forbidden'],
    ["the owner's organization key (confined)", apiKey(orgKey.key), { user_id: bot.id }, 403, 'forbidden'],
    ["the owner's admin user key", apiKey(adminKey.key), { user_id: bot.id }, 200, null],
  ];
  for (const [name, headers, body, status, error] of cases) {
    const res = await call(app, 'POST', '/v1/auth/core/impersonate', { headers, body });
    t.equal(res.status, status, name);
    if (error) t.equal(res.body.error, error, name);
    else t.equal(decodeJwt(res.body.acting_token).sub, bot.id, name);
  }
});

t.test("while acting, a service account's own service account can be impersonated, but not itself", async (t) => {
  const alice = await signInAnonymous(app);
  const bot = await createServiceAccount(app, alice.headers);
  const acting = await actAs(app, alice.headers, bot.id);
  const sub = await createServiceAccount(app, acting, 'sub');

  const self = await call(app, 'POST', '/v1/auth/core/impersonate', { headers: acting, body: { user_id: bot.id } });
  t.equal(self.status, 403, 'an acting token cannot renew itself');
  t.equal(self.body.error, 'forbidden');

  const { status, body } = await call(app, 'POST', '/v1/auth/core/impersonate', {
    headers: acting,
    body: { user_id: sub.id },
  });
  t.equal(status, 200);
  t.same(decodeJwt(body.acting_token).act, { sub: alice.user.id }, 'the human behind is carried on');
  const me = await call(app, 'GET', '/v1/users/me', { headers: bearer(body.acting_token) });
  t.equal(me.status, 200);
  t.equal(me.body.user.id, sub.id);

  // The owner itself does not reach a second-level account directly.
  const direct = await call(app, 'POST', '/v1/auth/core/impersonate', { as: alice, body: { user_id: sub.id } });
  t.equal(direct.status, 403);
});

t.test('an acting token stops working when the service account is retired or changes owner', async (t) => {
  const alice = await signInAnonymous(app);
  const bob = await signInAnonymous(app);
  const retired = await createServiceAccount(app, alice.headers);
  const moved = await createServiceAccount(app, alice.headers);
  const retiredToken = await actAs(app, alice.headers, retired.id);
  const movedToken = await actAs(app, alice.headers, moved.id);
  t.equal((await call(app, 'DELETE', `/v1/users/${retired.id}`, { as: alice })).status, 200);
  const afterRetire = await call(app, 'GET', '/v1/users/me', { headers: retiredToken });
  t.equal(afterRetire.status, 401);
  t.equal(afterRetire.body.error, 'unauthorized');

  // No API transfers a service account; the ownership check is what keeps the token honest.
  await db.query('UPDATE users SET owner_id = $1::uuid WHERE id = $2::uuid', [bob.user.id, moved.id]);
  const afterMove = await call(app, 'GET', '/v1/users/me', { headers: movedToken });
  t.equal(afterMove.status, 401);
});

t.test('an acting token is not an access token, nor the other way round', async (t) => {
  const alice = await signInAnonymous(app);
  const bot = await createServiceAccount(app, alice.headers);
  const tokens = createTokenService(config.secrets.TOKEN_SIGNING_KEY, 900);
  // An access token naming a service account: refused, a service account signs in only by key.
  const forged = await tokens.signAccess(bot.id);
  t.equal((await call(app, 'GET', '/v1/users/me', { headers: bearer(forged) })).status, 401);
  // An acting token naming a human as the account: refused.
  const humanActing = await tokens.signActing(alice.user.id, alice.user.id);
  t.equal((await call(app, 'GET', '/v1/users/me', { headers: bearer(humanActing) })).status, 401);
  // An acting token whose human does not own the account: refused.
  const mallory = await signInAnonymous(app);
  const stolen = await tokens.signActing(bot.id, mallory.user.id);
  t.equal((await call(app, 'GET', '/v1/users/me', { headers: bearer(stolen) })).status, 401);
});
