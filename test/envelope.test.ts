import t from 'tap';
import { buildTestApp, call, signInAnonymous } from './helpers/app.ts';

const { app } = await buildTestApp(t);

t.test('unknown route answers the failure envelope with 404 not_found', async (t) => {
  const { status, body, res } = await call(app, 'GET', '/v1/nope');
  t.equal(status, 404);
  t.match(body, { status: 'failure', error: 'not_found', message: String });
  t.ok(res.headers['x-request-id'], 'carries a request id');
});

t.test('malformed JSON is invalid_request_body', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/auth/anonymous',
    headers: { 'content-type': 'application/json' },
    payload: '{"a":',
  });
  t.equal(res.statusCode, 400);
  t.match(res.json(), { status: 'failure', error: 'invalid_request_body' });
});

t.test('a JSON body over 1 MiB is 413 payload_too_large', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/auth/anonymous',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ x: 'a'.repeat(1024 * 1024) }),
  });
  t.equal(res.statusCode, 413);
  t.match(res.json(), { status: 'failure', error: 'payload_too_large' });
});

t.test('unknown body fields are refused', async (t) => {
  const { status, body } = await call(app, 'POST', '/v1/auth/anonymous', { body: { extra: 1 } });
  t.equal(status, 400);
  t.equal(body.error, 'invalid_request_body');
});

t.test('anonymous sign-in answers the success envelope', async (t) => {
  const caller = await signInAnonymous(app);
  t.match(caller.user, { kind: 'human', anonymous: true });
  t.ok(caller.token);
});

t.test('failures fastify answers before routing keep the envelope and the request id', async (t) => {
  const long = await app.inject({ method: 'GET', url: `/v1/orgs/${'a'.repeat(1000)}` });
  t.equal(long.statusCode, 414);
  t.match(long.json(), { status: 'failure', error: 'uri_too_long', message: /path segment/ });
  t.ok(long.headers['x-request-id'], 'x-request-id');
  const bad = await app.inject({ method: 'GET', url: '/v1/orgs/%E0%A4%A' });
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { status: 'failure', error: 'invalid_request_body', message: /URL is not valid/ });
  t.ok(bad.headers['x-request-id'], 'x-request-id');
});

t.test('a JSON null body is refused, not read as no body', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: '/v1/auth/anonymous',
    headers: { 'content-type': 'application/json' },
    payload: 'null',
  });
  t.equal(res.statusCode, 400);
  t.match(res.json(), { status: 'failure', error: 'invalid_request_body', message: /null/ });
  const empty = await app.inject({
    method: 'POST',
    url: '/v1/auth/anonymous',
    headers: { 'content-type': 'application/json' },
    payload: '{}',
  });
  t.equal(empty.statusCode, 200, 'an object still passes');
});

t.test('text PostgreSQL cannot store, deep nesting and invalid UTF-8 are refused at the edge', async (t) => {
  const caller = await signInAnonymous(app);
  const post = (payload: string | Buffer) =>
    app.inject({
      method: 'POST',
      url: '/v1/orgs',
      headers: { ...caller.headers, 'content-type': 'application/json' },
      payload,
    });
  const nul = await post(JSON.stringify({ alias: 'nul-org', name: 'a\u0000b' }));
  t.equal(nul.statusCode, 400);
  t.match(nul.json(), { error: 'invalid_request_body', message: /name: text holds U\+0000/ });
  const surrogate = await post('{"alias":"sur-org","name":"\\ud800"}');
  t.equal(surrogate.statusCode, 400);
  t.match(surrogate.json(), { error: 'invalid_request_body', message: /name: .*unpaired surrogate/ });
  t.equal(
    (await post('{"alias":"pair-org","name":"\\ud83d\\ude00"}')).statusCode,
    201,
    'a surrogate pair is an ordinary character',
  );
  const deep = await post(`{"alias":"deep-org","name":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
  t.equal(deep.statusCode, 400);
  t.match(deep.json(), { error: 'invalid_request_body', message: /nested deeper than 64/ });
  const latin1 = await post(
    Buffer.concat([Buffer.from('{"alias":"bad-utf8","name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
  );
  t.equal(latin1.statusCode, 400);
  t.match(latin1.json(), { error: 'invalid_request_body', message: /UTF-8/ });
  const path = await app.inject({ method: 'GET', url: '/v1/orgs/a%00b', headers: caller.headers });
  t.equal(path.statusCode, 400);
  t.match(path.json(), { error: 'invalid_request_body', message: /path/ });
  const { rows } = await app.ctx.db.query(
    `SELECT count(*)::int AS n FROM orgs WHERE alias IN ('nul-org', 'sur-org', 'deep-org', 'bad-utf8')`,
  );
  t.equal(rows[0].n, 0, 'nothing stored');
});

t.test('a path that exists under other methods is 405 method_not_allowed with Allow, in the envelope', async (t) => {
  const res = await app.inject({ method: 'PUT', url: '/v1/orgs' });
  t.equal(res.statusCode, 405);
  t.equal(res.headers.allow, 'POST');
  t.ok(res.headers['x-request-id']);
  t.match(res.json(), { status: 'failure', error: 'method_not_allowed', message: /allowed: POST/ });
  const withParams = await app.inject({ method: 'POST', url: '/v1/orgs/00000000-0000-4000-8000-000000000000' });
  t.equal(withParams.statusCode, 405);
  t.equal(withParams.headers.allow, 'GET, HEAD, PATCH, DELETE');
  t.equal((await app.inject({ method: 'PUT', url: '/v1/nowhere' })).statusCode, 404, 'a path no method has stays 404');
});
