/**
 * What browsers meet (docs/api.md, "Conventions"): CORS only for the configured origins (none by default),
 * security headers on every answer, and a client's well-formed x-request-id kept and echoed.
 */
import t from 'tap';
import { buildTestApp, signInAnonymous } from './helpers/app.ts';

const preflight = (origin: string) => ({
  method: 'OPTIONS' as const,
  url: '/v1/orgs',
  headers: {
    origin,
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'authorization, content-type',
  },
});

t.test('no origin is allowed by default', async (t) => {
  const { app } = await buildTestApp(t);
  const res = await app.inject(preflight('https://app.example.com'));
  t.notOk(res.headers['access-control-allow-origin'], 'no CORS grant');
  const plain = await app.inject({
    method: 'POST',
    url: '/v1/auth/anonymous',
    payload: {},
    headers: { origin: 'https://app.example.com' },
  });
  t.notOk(plain.headers['access-control-allow-origin']);
});

t.test('configured origins get CORS (preflight and answers), others do not', async (t) => {
  const { app } = await buildTestApp(t, { CORS_ORIGINS: 'https://app.example.com, http://localhost:5173' });
  const res = await app.inject(preflight('https://app.example.com'));
  t.equal(res.statusCode, 204);
  t.equal(res.headers['access-control-allow-origin'], 'https://app.example.com');
  t.match(String(res.headers['access-control-allow-headers']), /authorization/);
  t.match(String(res.headers['access-control-allow-methods']), /POST/);
  const caller = await signInAnonymous(app);
  const read = await app.inject({
    method: 'GET',
    url: `/v1/users/${caller.user.id}`,
    headers: { ...caller.headers, origin: 'http://localhost:5173' },
  });
  t.equal(read.statusCode, 200);
  t.equal(read.headers['access-control-allow-origin'], 'http://localhost:5173');
  t.match(String(read.headers['access-control-expose-headers']), /x-request-id/);
  const other = await app.inject(preflight('https://evil.example.net'));
  t.notOk(other.headers['access-control-allow-origin'], 'an origin not listed gets no grant');
  await t.rejects(
    buildTestApp(t, { CORS_ORIGINS: 'https://app.example.com/path' }),
    /CORS_ORIGINS must list origins/,
    'an origin with a path is a configuration error',
  );
});

t.test('security headers on every answer, refusals included', async (t) => {
  const { app } = await buildTestApp(t);
  for (const res of [
    await app.inject({ method: 'POST', url: '/v1/auth/anonymous', payload: {} }),
    await app.inject({ method: 'GET', url: '/v1/nope' }),
  ]) {
    t.equal(res.headers['x-content-type-options'], 'nosniff');
    t.ok(res.headers['strict-transport-security'], 'HSTS');
    t.equal(res.headers['x-frame-options'], 'SAMEORIGIN');
  }
});

t.test('a well-formed x-request-id is kept and echoed; anything else is replaced', async (t) => {
  const { app } = await buildTestApp(t);
  const kept = await app.inject({
    method: 'GET',
    url: '/v1/nope',
    headers: { 'x-request-id': 'client-trace:42.abc_DEF-1' },
  });
  t.equal(kept.headers['x-request-id'], 'client-trace:42.abc_DEF-1');
  for (const bad of ['has space', 'x'.repeat(129), 'semi;colon', '']) {
    const res = await app.inject({ method: 'GET', url: '/v1/nope', headers: { 'x-request-id': bad } });
    t.match(String(res.headers['x-request-id']), /^[0-9a-f-]{36}$/, `replaced: ${JSON.stringify(bad.slice(0, 20))}`);
  }
});
