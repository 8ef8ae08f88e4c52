/**
 * Abuse throttles per client address (control-plane/plugins/throttle.ts): anonymous sign-ups,
 * failed credentials (counted on failures only), concurrent WebSocket connections; and the ops
 * API's bounds on aliases, depth and cost. Test fixtures turn the throttles off
 * (test/helpers/app.ts); each app here turns one on with a small value.
 */
import { get } from 'node:http';
import t from 'tap';
import { mintKey } from './helpers/access.ts';
import { buildTestApp, signInAnonymous as signIn } from './helpers/app.ts';
import { opsRequest, startOpsApp } from './helpers/ops.ts';
import { wsUrl } from './helpers/ws-client.ts';

t.test(
  'anonymous sign-ups past SIGNUPS_PER_MINUTE from one address are refused with 429, Retry-After and the envelope',
  async (t) => {
    const { app } = await buildTestApp(t, { SIGNUPS_PER_MINUTE: '3' });
    const statuses = [];
    for (let i = 0; i < 3; i++)
      statuses.push((await app.inject({ method: 'POST', url: '/v1/auth/anonymous', payload: {} })).statusCode);
    t.same(statuses, [200, 200, 200]);
    const refused = await app.inject({ method: 'POST', url: '/v1/auth/anonymous', payload: {} });
    t.equal(refused.statusCode, 429);
    t.match(refused.json(), { status: 'failure', error: 'rate_limited', message: /sign-ups/ });
    t.ok(
      Number(refused.headers['retry-after']) >= 1 && Number(refused.headers['retry-after']) <= 60,
      `Retry-After ${refused.headers['retry-after']}`,
    );
    t.ok(refused.headers['x-request-id']);
    const other = await app.inject({
      method: 'POST',
      url: '/v1/auth/anonymous',
      payload: {},
      remoteAddress: '10.1.2.3',
    });
    t.equal(other.statusCode, 200, 'another address is not affected');
    const { rows } = await app.ctx.db.query<{ n: number }>('SELECT count(*)::int AS n FROM users');
    t.equal(rows[0]!.n, 4, 'the refused sign-up created nothing');
  },
);

t.test(
  'failed credentials: counted per credential on failures only; past AUTH_FAILURES_PER_MINUTE that credential is refused, valid ones from the address are not',
  async (t) => {
    const { app } = await buildTestApp(t, { AUTH_FAILURES_PER_MINUTE: '5' });
    const honest = await signIn(app);
    const { key } = await mintKey(app, honest, 'user', honest.user.id, 'read');
    for (let i = 0; i < 30; i++) {
      const res = await app.inject({ method: 'GET', url: `/v1/users/${honest.user.id}`, headers: honest.headers });
      if (res.statusCode !== 200) t.fail(`an honest request was refused: ${res.statusCode}`);
    }
    const bad = { authorization: 'Bearer not-a-token' };
    const failures = [];
    for (let i = 0; i < 5; i++)
      failures.push((await app.inject({ method: 'GET', url: `/v1/users/${honest.user.id}`, headers: bad })).statusCode);
    t.same(failures, [401, 401, 401, 401, 401], 'five failures answer 401');
    const blocked = await app.inject({ method: 'GET', url: `/v1/users/${honest.user.id}`, headers: bad });
    t.equal(blocked.statusCode, 429);
    t.match(blocked.json(), { status: 'failure', error: 'rate_limited', message: /credential/ });
    t.ok(Number(blocked.headers['retry-after']) >= 1);
    t.equal(
      (await app.inject({ method: 'GET', url: `/v1/users/${honest.user.id}`, headers: bad, remoteAddress: '10.9.9.9' }))
        .statusCode,
      429,
      'the failing credential is refused from any address',
    );

    // The address that failed keeps working for every valid credential: tokens, keys, refresh, WebSocket.
    t.equal(
      (await app.inject({ method: 'GET', url: `/v1/users/${honest.user.id}`, headers: honest.headers })).statusCode,
      200,
      'a valid token from the same address',
    );
    t.equal(
      (await app.inject({ method: 'GET', url: `/v1/users/${honest.user.id}`, headers: { 'x-api-key': key } }))
        .statusCode,
      200,
      'a valid API key from the same address',
    );
    const socket = new WebSocket(await wsUrl(app), [
      'authorization.bearer.base64',
      Buffer.from(honest.token).toString('base64url'),
    ]);
    const opened = await new Promise<boolean>((resolve) => {
      socket.addEventListener('open', () => resolve(true), { once: true });
      socket.addEventListener('error', () => resolve(false), { once: true });
    });
    t.ok(opened, 'a WebSocket with a valid token from the same address');
    socket.close();

    const badRefresh = [];
    for (let i = 0; i < 6; i++)
      badRefresh.push(
        (
          await app.inject({
            method: 'POST',
            url: '/v1/auth/refresh',
            payload: { refresh_token: 'not-a-refresh-token' },
          })
        ).statusCode,
      );
    t.same(badRefresh, [401, 401, 401, 401, 401, 429], 'a bad refresh token is throttled too');
    t.equal(
      (await app.inject({ method: 'POST', url: '/v1/auth/refresh', payload: { refresh_token: honest.refreshToken } }))
        .statusCode,
      200,
      'a valid refresh token from the same address',
    );
    t.equal(
      (await app.inject({ method: 'POST', url: '/v1/auth/anonymous', payload: {} })).statusCode,
      200,
      'a request without a credential is not refused',
    );
  },
);

t.test(
  'WebSocket connections past WS_CONNECTIONS_PER_ADDRESS are refused with 429 before the upgrade; a closed one frees its slot',
  async (t) => {
    const { app } = await buildTestApp(t, { WS_CONNECTIONS_PER_ADDRESS: '2' });
    const caller = await signIn(app);
    const url = await wsUrl(app);
    const protocols = ['authorization.bearer.base64', Buffer.from(caller.token).toString('base64url')];
    const open = async () => {
      const socket = new WebSocket(url, protocols);
      return new Promise<{ socket: WebSocket; opened: boolean }>((resolve) => {
        socket.addEventListener('open', () => resolve({ socket, opened: true }), { once: true });
        socket.addEventListener('error', () => resolve({ socket, opened: false }), { once: true });
      });
    };
    const first = await open();
    const second = await open();
    t.ok(first.opened && second.opened, 'two connections open');
    const third = await open();
    t.notOk(third.opened, 'a third is refused');
    // The refusal itself, as a raw upgrade request sees it (fetch will not send Upgrade).
    const refused = await new Promise<{ status: number; retryAfter: string | undefined; body: string }>(
      (resolve, reject) => {
        const request = get(
          url.replace(/^ws/, 'http'),
          {
            headers: {
              connection: 'Upgrade',
              upgrade: 'websocket',
              'sec-websocket-version': '13',
              'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
              authorization: `Bearer ${caller.token}`,
            },
          },
          (res) => {
            let body = '';
            res.on('data', (chunk) => (body += chunk));
            res.on('end', () =>
              resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string | undefined, body }),
            );
          },
        );
        request.on('upgrade', () => reject(new Error('upgraded')));
        request.on('error', reject);
      },
    );
    t.equal(refused.status, 429);
    t.match(JSON.parse(refused.body), { status: 'failure', error: 'rate_limited' });
    t.equal(refused.retryAfter, '5');
    first.socket.close();
    await new Promise((resolve) => first.socket.addEventListener('close', resolve, { once: true }));
    let again = { socket: first.socket, opened: false };
    for (let i = 0; i < 50 && !again.opened; i++) {
      again = await open();
      if (!again.opened) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    t.ok(again.opened, 'a closed connection gave its slot back');
    second.socket.close();
    again.socket.close();
  },
);

t.test(
  'the ops API bounds aliases, depth and cost, refuses text that cannot be stored; introspection still works',
  async (t) => {
    const { db, config, databaseUrl } = await buildTestApp(t);
    const { ops } = await startOpsApp(t, { config, db, databaseUrl });
    const graphql = async (query: string) =>
      (await opsRequest(ops, query, `Bearer ${config.secrets.OPS_TOKEN}`)).body as {
        data?: unknown;
        errors?: Array<{ message: string }>;
      };
    const aliases = Array.from({ length: 500 }, (_, i) => `a${i}: health { status }`).join(' ');
    const many = await graphql(`{ ${aliases} }`);
    t.equal(many.data ?? null, null, 'a 500-alias query is not executed');
    t.match(many.errors?.[0]?.message, /aliases/i);
    t.match(
      await graphql(`{ ${Array.from({ length: 15 }, (_, i) => `a${i}: health { status }`).join(' ')} }`),
      { data: { a0: { status: 'ok' } } },
      '15 aliases are fine',
    );
    const nul = await graphql(
      'mutation { setLimitOverride(limitId: "platform.orgs_per_user", targetType: user, targetId: "x\\u0000", value: 5) { __typename } }',
    );
    t.match(
      nul,
      { errors: [{ message: /cannot be stored/, extensions: { code: 'invalid_argument' } }] },
      'a string argument with U+0000 is refused before it reaches the database',
    );
    const viaVariables = await ops.inject({
      method: 'POST',
      url: '/graphql',
      headers: { authorization: `Bearer ${config.secrets.OPS_TOKEN}`, 'content-type': 'application/json' },
      payload:
        '{"query":"mutation ($id: String!) { clearLimitOverride(limitId: \\"platform.orgs_per_user\\", targetType: user, targetId: $id) { __typename } }","variables":{"id":"x\\u0000"}}',
    });
    t.equal(viaVariables.statusCode, 400);
    t.match(
      viaVariables.json(),
      { errors: [{ message: /variables\.id: text holds U\+0000/, extensions: { code: 'invalid_argument' } }] },
      'and in variables',
    );
    const introspection = await graphql(
      '{ __schema { types { name fields { name type { name kind ofType { name kind ofType { name kind ofType { name } } } } } } } }',
    );
    t.ok(
      Array.isArray((introspection.data as { __schema?: { types?: unknown[] } })?.__schema?.types),
      'introspection answers',
    );
  },
);
