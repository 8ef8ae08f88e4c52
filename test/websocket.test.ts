import { request as httpRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { createTokenService } from '../control-plane/auth/tokens.ts';
import { readHandshake } from '../control-plane/ws/handshake.ts';
import { buildTestApp, call, signInAnonymous, type Caller } from './helpers/app.ts';
import { b64url, connect, refusedUpgrade, wsUrl } from './helpers/ws-client.ts';

const { app, config } = await buildTestApp(t);
const url = await wsUrl(app);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);

/** A token the service would have signed with a different lifetime (negative: already expired). */
function tokenLasting(seconds: number, userId: string): Promise<string> {
  return createTokenService(config.secrets.TOKEN_SIGNING_KEY, seconds).signAccess(userId);
}

/** Mints an admin API key for the caller's own account. */
async function userKey(caller: Caller): Promise<{ key: string; id: string }> {
  const { status, body } = await call(app, 'POST', '/v1/api-keys', {
    as: caller,
    body: { target: 'user', target_id: caller.user.id, role: 'admin' },
  });
  if (status !== 200 && status !== 201) throw new Error(`minting a key failed: ${status} ${JSON.stringify(body)}`);
  return { key: body.api_key.key, id: body.api_key.id };
}

const getMe = { jsonrpc: '2.0', id: 1, method: 'get_user', params: { user_id: 'me' } };

t.test('handshake', async (t) => {
  t.test('native Authorization: Bearer is accepted with no sub-protocol', async (t) => {
    const client = await connect(t, url, { headers: { authorization: `Bearer ${alice.token}` } });
    t.equal(client.protocol, '');
    const reply = await client.call(getMe);
    t.same(reply, { jsonrpc: '2.0', id: 1, result: { user: alice.user } });
  });

  t.test('sub-protocol bearer (base64url, no padding) answers authorization.bearer.base64', async (t) => {
    const client = await connect(t, url, { protocols: ['authorization.bearer.base64', b64url(alice.token)] });
    t.equal(client.protocol, 'authorization.bearer.base64');
    const reply = await client.call(getMe);
    t.equal(reply.result.user.id, alice.user.id);
  });

  t.test('sub-protocol bearer in standard padded base64 is accepted, and the credential is never echoed', async (t) => {
    // ws clients refuse `/` and `=` in a protocol, so this one goes through a raw upgrade request.
    const standard = Buffer.from(alice.token).toString('base64');
    const { port } = new URL(url);
    const answer = await new Promise<{ status: number; protocol: string | undefined }>((resolve, reject) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        path: '/v1',
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': Buffer.from(randomUUID().slice(0, 16)).toString('base64'),
          'sec-websocket-protocol': `authorization.bearer.base64, ${standard}`,
        },
      });
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, protocol: res.headers['sec-websocket-protocol'] as string | undefined });
      });
      req.on('response', (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, protocol: undefined });
      });
      req.on('error', reject);
      req.end();
    });
    t.equal(answer.status, 101);
    t.equal(answer.protocol, 'authorization.bearer.base64');
  });

  t.test('credential decoding: base64url or standard base64, padded or not, never mixed', async (t) => {
    const secret = 'wsk_??>>~~~?x';
    const forms = {
      url: Buffer.from(secret).toString('base64url'),
      standard: Buffer.from(secret).toString('base64'),
      unpadded: Buffer.from(secret).toString('base64').replace(/=+$/, ''),
    };
    t.match(forms.standard, /[+/]/, 'the fixture exercises the standard alphabet');
    t.match(forms.standard, /=$/, 'the fixture is padded');
    for (const [name, value] of Object.entries(forms)) {
      t.same(
        readHandshake({ 'sec-websocket-protocol': `x-api-key.base64, ${value}` }),
        { credential: { type: 'api_key', key: secret }, protocol: 'x-api-key.base64' },
        name,
      );
    }
    const mixed = forms.url.replace(/_|-/, '+');
    for (const bad of [
      mixed,
      forms.standard + '=',
      '=' + forms.url,
      Buffer.from('has space').toString('base64url'),
      Buffer.from([0xff, 0xfe]).toString('base64url'),
      '',
    ]) {
      t.throws(
        () => readHandshake({ 'sec-websocket-protocol': `x-api-key.base64, ${bad}` }),
        { code: 'unauthorized' },
        JSON.stringify(bad),
      );
    }
  });

  t.test('native X-API-Key and sub-protocol x-api-key.base64', async (t) => {
    const { key } = await userKey(alice);
    const native = await connect(t, url, { headers: { 'x-api-key': key } });
    t.equal(native.protocol, '');
    t.equal((await native.call(getMe)).result.user.id, alice.user.id);
    const viaProtocol = await connect(t, url, { protocols: ['x-api-key.base64', b64url(key)] });
    t.equal(viaProtocol.protocol, 'x-api-key.base64');
    t.equal((await viaProtocol.call(getMe)).result.user.id, alice.user.id);
  });

  const refusals: Array<[string, () => Promise<{ headers?: Record<string, string>; protocols?: string[] }>, RegExp?]> =
    [
      ['no credential', async () => ({})],
      ['a bad bearer token', async () => ({ headers: { authorization: 'Bearer not-a-token' } })],
      [
        'a bad token in the sub-protocol',
        async () => ({ protocols: ['authorization.bearer.base64', b64url('not-a-token')] }),
      ],
      [
        'a credential that is not base64',
        async () => ({ protocols: ['authorization.bearer.base64', 'not~base64!'] }),
        /base64/,
      ],
      [
        'base64 of a length no encoder produces',
        async () => ({ protocols: ['authorization.bearer.base64', 'abcde'] }),
        /base64/,
      ],
      [
        'an unknown sub-protocol beside a valid header',
        async () => ({ headers: { authorization: `Bearer ${alice.token}` }, protocols: ['graphql-ws'] }),
        /Sec-WebSocket-Protocol/,
      ],
      [
        'a carrier without its credential',
        async () => ({ protocols: ['authorization.bearer.base64'] }),
        /Sec-WebSocket-Protocol/,
      ],
      [
        'a header and a sub-protocol at once',
        async () => ({
          headers: { authorization: `Bearer ${alice.token}` },
          protocols: ['authorization.bearer.base64', b64url(alice.token)],
        }),
        /one credential/,
      ],
      ['an unknown API key', async () => ({ headers: { 'x-api-key': 'wsk_nope_nope' } })],
      [
        'an unknown API key in the sub-protocol',
        async () => ({ protocols: ['x-api-key.base64', b64url('wsk_nope_nope')] }),
      ],
      [
        'an expired token',
        async () => ({ headers: { authorization: `Bearer ${await tokenLasting(-60, alice.user.id)}` } }),
      ],
      [
        'an expired token in the sub-protocol',
        async () => ({ protocols: ['authorization.bearer.base64', b64url(await tokenLasting(-60, alice.user.id))] }),
      ],
    ];
  for (const [name, options, message] of refusals) {
    t.test(`refuses ${name} with HTTP 401 and the envelope`, async (t) => {
      const refusal = await refusedUpgrade(url, await options());
      t.equal(refusal.status, 401);
      t.match(refusal.body, { status: 'failure', error: 'unauthorized', message: message ?? String });
      t.notOk(refusal.headers['sec-websocket-protocol']);
    });
  }

  t.test('a plain GET /v1 (no upgrade) is 404 not_found', async (t) => {
    const { status, body } = await call(app, 'GET', '/v1', { as: alice });
    t.equal(status, 404);
    t.match(body, { status: 'failure', error: 'not_found' });
  });
});

t.test('a token that expires while the socket is open closes it with 4001', async (t) => {
  // Lives 1-2 s (JWT expiry has whole seconds): long enough to open, short enough to wait for.
  const token = await tokenLasting(2, alice.user.id);
  const client = await connect(t, url, { headers: { authorization: `Bearer ${token}` } });
  t.equal((await client.call(getMe)).result.user.id, alice.user.id);
  const { code } = await client.closed;
  t.equal(code, 4001);
});

t.test(
  'an account deleted while its socket is open: the next call answers unauthorized and the socket closes 4001',
  async (t) => {
    const carol = await signInAnonymous(app);
    const client = await connect(t, url, { headers: carol.headers });
    t.equal((await client.call(getMe)).result.user.id, carol.user.id);
    const deleted = await call(app, 'DELETE', `/v1/users/${carol.user.id}`, { as: carol });
    t.equal(deleted.status, 200, 'the account is deleted');
    const reply = await client.call(getMe);
    t.match(reply, {
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32001, data: { error: 'unauthorized', http_status: 401 } },
    });
    t.equal((await client.closed).code, 4001);
  },
);

t.test(
  'an API key revoked while its socket is open: the next call answers unauthorized and the socket closes 4001',
  async (t) => {
    const { key, id } = await userKey(alice);
    const client = await connect(t, url, { protocols: ['x-api-key.base64', b64url(key)] });
    t.equal((await client.call(getMe)).result.user.id, alice.user.id);
    const revoked = await call(app, 'DELETE', '/v1/api-keys', { as: alice, body: { id } });
    t.equal(revoked.status, 200, 'the key is revoked');
    const reply = await client.call(getMe);
    t.match(reply, { id: 1, error: { code: -32001, data: { error: 'unauthorized', http_status: 401 } } });
    t.equal((await client.closed).code, 4001);
  },
);

t.test('JSON-RPC 2.0', async (t) => {
  const client = await connect(t, url, { headers: alice.headers });

  t.test('parse error: -32700 with id null', async (t) => {
    const reply = await client.call('{"jsonrpc": "2.0", "method": "get_user", "params": ');
    t.same(reply.id, null);
    t.match(reply, {
      jsonrpc: '2.0',
      error: { code: -32700, message: String, data: { error: 'invalid_request_body', http_status: 400 } },
    });
  });

  t.test('invalid requests: -32600, id echoed when it is a valid id', async (t) => {
    const cases: Array<[unknown, string | number | null]> = [
      [{ jsonrpc: '1.0', id: 7, method: 'get_user' }, 7],
      [{ jsonrpc: '2.0', id: 'x', method: 1 }, 'x'],
      [{ jsonrpc: '2.0', method: 'get_user', params: 'me' }, null],
      [{ jsonrpc: '2.0', id: { no: 1 }, method: 'get_user' }, null],
      [{ jsonrpc: '2.0', id: 3, method: 'get_user', params: {}, extra: true }, 3],
      ['"a string"', null],
      [42, null],
    ];
    for (const [request, id] of cases) {
      const reply = await client.call(request);
      t.same(reply.id, id, JSON.stringify(request));
      t.match(reply.error, { code: -32600, data: { error: 'invalid_request_body', http_status: 400 } });
    }
  });

  t.test('unknown method: -32601 unknown_command', async (t) => {
    const reply = await client.call({ jsonrpc: '2.0', id: 'a', method: 'no_such_command', params: {} });
    t.match(reply, { id: 'a', error: { code: -32601, data: { error: 'unknown_command', http_status: 404 } } });
  });

  t.test('invalid params: -32602 with the REST code in data', async (t) => {
    for (const params of [{ user_id: 5 }, { user_id: 'me', extra: 1 }, {}, ['me']]) {
      const reply = await client.call({ jsonrpc: '2.0', id: 2, method: 'get_user', params });
      t.match(
        reply,
        {
          id: 2,
          error: {
            code: -32602,
            message: String,
            data: { error: 'invalid_request_body', message: String, http_status: 400 },
          },
        },
        JSON.stringify(params),
      );
    }
  });

  t.test('any other refusal: -32001 with error, message and http_status', async (t) => {
    const reply = await client.call({ jsonrpc: '2.0', id: 4, method: 'get_user', params: { user_id: randomUUID() } });
    t.same(reply, {
      jsonrpc: '2.0',
      id: 4,
      error: {
        code: -32001,
        message: 'No such user.',
        data: { error: 'not_found', message: 'No such user.', http_status: 404 },
      },
    });
  });

  t.test('ids are echoed exactly: string, number, null', async (t) => {
    for (const id of ['abc', 0, -12.5, null, '']) {
      const reply = await client.call({ ...getMe, id });
      t.same(reply.id, id);
      t.equal(reply.result.user.id, alice.user.id);
    }
  });

  t.test('a batch answers in order and leaves notifications out', async (t) => {
    const reply = await client.call([
      { jsonrpc: '2.0', id: 'first', method: 'get_user', params: { user_id: 'me' } },
      { jsonrpc: '2.0', method: 'get_user', params: { user_id: 'me' } },
      { jsonrpc: '2.0', method: 'no_such_command' },
      { jsonrpc: '2.0', id: 'bad', method: 'get_user', params: { nope: true } },
      1,
      { jsonrpc: '2.0', id: 9, method: 'get_user', params: { user_id: bob.user.id } },
    ]);
    t.ok(Array.isArray(reply));
    t.same(
      reply.map((r: any) => r.id),
      ['first', 'bad', null, 9],
    );
    t.equal(reply[0].result.user.id, alice.user.id);
    t.equal(reply[1].error.code, -32602);
    t.equal(reply[2].error.code, -32600);
    t.equal(reply[3].result.user.id, bob.user.id);
  });

  t.test('an empty batch is one -32600 error, not an array', async (t) => {
    const reply = await client.call([]);
    t.same(reply.id, null);
    t.match(reply, { jsonrpc: '2.0', error: { code: -32600 } });
  });

  t.test('a batch over 1000 entries is one -32600 error and runs nothing', async (t) => {
    const reply = await client.call(Array.from({ length: 1001 }, (_, id) => ({ ...getMe, id })));
    t.same(reply.id, null);
    t.match(reply, { error: { code: -32600, message: /at most 1000/ } });
  });

  t.test('notifications, alone or in an all-notification batch, get no reply', async (t) => {
    client.send({ jsonrpc: '2.0', method: 'get_user', params: { user_id: 'me' } });
    client.send([
      { jsonrpc: '2.0', method: 'get_user', params: { user_id: 'me' } },
      { jsonrpc: '2.0', method: 'no_such_command' },
    ]);
    client.send({ jsonrpc: '2.0', method: 'get_user', params: { wrong: 1 } });
    // Fences: each answered request shows the socket is being served; nothing else may arrive.
    t.equal((await client.call({ ...getMe, id: 'fence-1' })).id, 'fence-1');
    t.equal((await client.call({ ...getMe, id: 'fence-2' })).id, 'fence-2');
    t.equal(client.pending(), 0);
  });

  t.test('a binary frame is a parse error and the socket stays open', async (t) => {
    client.socket.send(Buffer.from(JSON.stringify(getMe)), { binary: true });
    const reply = await client.next();
    t.match(reply, { id: null, error: { code: -32700 } });
    t.equal((await client.call(getMe)).result.user.id, alice.user.id);
  });

  t.test('many requests at once are all answered', async (t) => {
    const ids = Array.from({ length: 60 }, (_, i) => i);
    for (const id of ids) client.send({ ...getMe, id });
    const replies = await Promise.all(ids.map(() => client.next()));
    t.same(
      replies.map((r) => r.id).sort((a, b) => a - b),
      ids,
    );
    t.ok(replies.every((r) => r.result.user.id === alice.user.id));
  });
});

t.test('get_user', async (t) => {
  const client = await connect(t, url, { headers: alice.headers });
  const get = async (user_id: string) =>
    (await client.call({ jsonrpc: '2.0', id: user_id, method: 'get_user', params: { user_id } })).result.user;

  t.test('me and the own id give the full profile, the same as REST', async (t) => {
    const rest = await call(app, 'GET', '/v1/users/me', { as: alice });
    t.same(await get('me'), rest.body.user);
    t.same(await get(alice.user.id), rest.body.user);
    t.match(await get('me'), { id: alice.user.id, kind: 'human', anonymous: true });
  });

  t.test('another user gives the public fields only', async (t) => {
    const other = await get(bob.user.id);
    t.same(Object.keys(other).sort(), ['alias', 'created_at', 'id', 'kind', 'name']);
    t.same(other, (await call(app, 'GET', `/v1/users/${bob.user.id}`, { as: alice })).body.user);
  });
});

t.test('message size', async (t) => {
  const client = await connect(t, url, { headers: alice.headers });

  t.test('a message just under 8 MiB is read and answered', async (t) => {
    const big = 'a'.repeat(8 * 1024 * 1024 - 200);
    const reply = await client.call({
      jsonrpc: '2.0',
      id: 'big',
      method: 'get_user',
      params: { user_id: 'me', padding: big },
    });
    t.match(reply, { id: 'big', error: { code: -32602 } });
  });

  t.test('a frame over 8 MiB closes the socket with 1009, and the server goes on serving', async (t) => {
    client.send('"' + 'a'.repeat(8 * 1024 * 1024 + 1) + '"');
    t.equal((await client.closed).code, 1009);
    const fresh = await connect(t, url, { headers: alice.headers });
    t.equal((await fresh.call(getMe)).result.user.id, alice.user.id);
  });
});

t.test('a text frame that is not UTF-8 closes the socket with 1007', async (t) => {
  const client = await connect(t, url, { headers: alice.headers });
  client.socket.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: false });
  t.equal((await client.closed).code, 1007);
});

t.test('REST and JSON-RPC give the same error for the same bad input on a revision command path', async (t) => {
  const client = await connect(t, url, { headers: alice.headers });
  const org = await call(app, 'POST', '/v1/orgs', { as: alice, body: { alias: 'ws-alice-org' } });
  t.equal(org.status, 201, 'organization created');
  const blob = await call(app, 'POST', `/v1/blobs/${org.body.org.id}`, {
    as: alice,
    body: { type: 'svc.compute.workflow', alias: 'ws-alice-flow' },
  });
  t.equal(blob.status, 201, 'blob created');
  const revisionId: string = blob.body.revision.id;

  const cases: Array<[string, string, unknown, Caller, { status: number; error: string; rpc: number }]> = [
    ['no such revision', randomUUID(), {}, alice, { status: 404, error: 'not_found', rpc: -32001 }],
    ['a revision id that is not a UUID', 'not-a-revision', {}, alice, { status: 404, error: 'not_found', rpc: -32001 }],
    ['a revision the caller may not read', revisionId, {}, bob, { status: 404, error: 'not_found', rpc: -32001 }],
    [
      'a command the revision does not answer',
      revisionId,
      {},
      alice,
      { status: 404, error: 'unknown_command', rpc: -32601 },
    ],
    [
      'a non-revision command on a revision',
      revisionId,
      { user_id: 'me' },
      alice,
      { status: 404, error: 'unknown_command', rpc: -32601 },
    ],
  ];
  const commandOf = (name: string) =>
    name === 'a non-revision command on a revision' ? 'get_user' : 'create_schedule';
  for (const [name, revision, params, caller, expected] of cases) {
    const rest = await call(app, 'POST', `/v1/revisions/${revision}/${commandOf(name)}`, { as: caller, body: params });
    t.equal(rest.status, expected.status, `${name}: REST status`);
    t.equal(rest.body.error, expected.error, `${name}: REST error`);
    const rpcClient = caller === alice ? client : await connect(t, url, { headers: caller.headers });
    const reply = await rpcClient.call({
      jsonrpc: '2.0',
      id: name,
      method: commandOf(name),
      params: { revision_id: revision, ...(params as object) },
    });
    if (commandOf(name) === 'get_user') {
      // get_user takes no revision: JSON-RPC runs it, and the stray param is refused.
      t.equal(reply.error.code, -32602, `${name}: get_user refuses revision_id`);
      continue;
    }
    t.same(
      reply.error,
      {
        code: expected.rpc,
        message: rest.body.message,
        data: { error: rest.body.error, message: rest.body.message, http_status: rest.status },
      },
      `${name}: JSON-RPC error`,
    );
  }
});

t.test('server shutdown closes open sockets with 1001', async (t) => {
  const other = await buildTestApp(t);
  const caller = await signInAnonymous(other.app);
  const client = await connect(t, await wsUrl(other.app), { headers: caller.headers });
  t.equal((await client.call(getMe)).result.user.id, caller.user.id);
  await other.app.close();
  t.equal((await client.closed).code, 1001);
});

t.test('a message with unstorable text or past 64 levels of nesting is invalid params, naming where', async (t) => {
  const client = await connect(t, url, { headers: { authorization: `Bearer ${alice.token}` } });
  const nul = await client.call('{"jsonrpc":"2.0","id":9,"method":"get_user","params":{"user_id":"me\\u0000"}}');
  t.match(nul, {
    jsonrpc: '2.0',
    id: 9,
    error: { code: -32602, data: { error: 'invalid_request_body', message: /user_id: text holds U\+0000/ } },
  });
  const deep = await client.call(
    `{"jsonrpc":"2.0","id":10,"method":"get_user","params":{"user_id":"me","x":${'['.repeat(10_000)}${']'.repeat(10_000)}}}`,
  );
  t.match(deep, { id: 10, error: { code: -32602, data: { message: /nested deeper than 64/ } } });
  t.match(await client.call(getMe), { id: 1, result: { user: { id: alice.user.id } } }, 'the socket still serves');
});
