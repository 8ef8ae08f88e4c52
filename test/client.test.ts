// The client package (client/src) against a listening control plane and a runner: a REST round
// trip per route family through the generated types, the checked-in types against the served
// document, idempotency keys on creates and their retries, typed errors on both transports, and
// the WebSocket client's commands, batches, subscriptions, both credential forms and
// reconnect with resubscribe.
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import {
  ApiError,
  ConnectionError,
  createRestClient,
  ok,
  RpcClient,
  socketUrlOf,
  type EventRecord,
  type SocketFactory,
} from '../client/src/index.ts';
import {
  IDEMPOTENT_OPERATIONS_FILE,
  idempotentOperations,
  idempotentOperationsSource,
  REST_TYPES_FILE,
  restTypesSource,
} from '../scripts/client-types.ts';
import { buildTestApp, setOverride, signInAnonymous } from './helpers/app.ts';
import { addModel } from './helpers/onnx-models.ts';
import { uniqueAlias } from './helpers/resources.ts';
import { startEngine, waitFor } from './helpers/runner.ts';

const { app, databaseUrl } = await buildTestApp(t);
await app.listen({ port: 0, host: '127.0.0.1' });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
await startEngine(t, databaseUrl);

const GRAPH = {
  start: 'greet',
  nodes: {
    greet: {
      processor: 'logic.code',
      config: { code: 'export default async (input) => ({hello: input.name})' },
      routes: { success: 'shout' },
    },
    shout: {
      processor: 'logic.code',
      config: { code: 'export default async (input) => ({loud: input.hello.toUpperCase()})' },
    },
  },
};

t.test('the checked-in generated files are what the served document generates', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/v1/openapi.json' });
  t.equal(res.statusCode, 200);
  const document = res.json();
  t.ok(
    (await restTypesSource(document)) === (await readFile(REST_TYPES_FILE, 'utf8')),
    'client/src/rest-types.ts is up to date (run npm run client:types)',
  );
  t.ok(
    idempotentOperationsSource(document) === (await readFile(IDEMPOTENT_OPERATIONS_FILE, 'utf8')),
    'client/src/idempotent-operations.ts is up to date (run npm run client:types)',
  );
  t.ok(
    idempotentOperations(document).includes('POST /v1/revisions/{revision_id}/create_execution'),
    'creating commands are among them',
  );
});

t.test('REST: a round trip per route family', async (t) => {
  const anonymous = createRestClient({ baseUrl: base });
  const signedIn = await ok(anonymous.POST('/v1/auth/anonymous', { body: {} }));
  t.equal(signedIn.token_type, 'Bearer');
  // Refresh rotates the pair; the new access token is the one used from here on.
  const refreshed = await ok(anonymous.POST('/v1/auth/refresh', { body: { refresh_token: signedIn.refresh_token } }));
  t.not(refreshed.refresh_token, signedIn.refresh_token);
  const rest = createRestClient({ baseUrl: base, credential: { token: () => refreshed.access_token } });

  const { user } = await ok(rest.GET('/v1/users/{user_id}', { params: { path: { user_id: 'me' } } }));
  t.equal(user.id, signedIn.user.id, 'users: GET /v1/users/me');

  const orgAlias = uniqueAlias('org');
  const { org } = await ok(rest.POST('/v1/orgs', { body: { alias: orgAlias } }));
  t.equal(org.alias, orgAlias, 'orgs: create');
  t.equal(
    (await ok(rest.GET('/v1/orgs/{id}', { params: { path: { id: orgAlias } } }))).org.id,
    org.id,
    'orgs: get by alias',
  );
  const { orgs } = await ok(rest.GET('/v1/users/{user_id}/orgs', { params: { path: { user_id: 'me' } } }));
  t.same(
    orgs.map((o) => o.id),
    [org.id],
    'users: orgs',
  );

  const blobAlias = uniqueAlias('blob');
  const { blob, revision } = await ok(
    rest.POST('/v1/blobs/{org_id}', {
      params: { path: { org_id: org.id } },
      body: { type: 'svc.compute.workflow', alias: blobAlias },
    }),
  );
  t.equal(blob.alias, blobAlias, 'blobs: create');
  t.equal(revision.number, 1);
  const { blobs } = await ok(rest.GET('/v1/orgs/{id}/blobs', { params: { path: { id: org.id } } }));
  t.same(
    blobs.map((b) => b.id),
    [blob.id],
    'orgs: blobs',
  );

  const second = await ok(
    rest.POST('/v1/blobs/{org_id}/{blob_id}/revisions', {
      params: { path: { org_id: org.id, blob_id: blob.id } },
      body: {},
    }),
  );
  t.equal(second.revision.number, 2, 'revisions: create');
  const page = await ok(
    rest.GET('/v1/blobs/{org_id}/{blob_id}/revisions', {
      params: { path: { org_id: org.id, blob_id: blob.id }, query: { limit: 1 } },
    }),
  );
  t.equal(page.revisions.length, 1, 'revisions: list, one per page');
  t.type(page.cursor, 'string');
  t.equal(
    (await ok(rest.GET('/v1/revisions/{id}', { params: { path: { id: revision.id } } }))).revision.id,
    revision.id,
    'revisions: get',
  );

  const put = await ok(
    rest.PUT('/v1/revisions/{id}/metadata/{alias}', {
      params: { path: { id: revision.id, alias: 'notes' } },
      body: { entries: [{ a: 1 }] },
    }),
  );
  t.same(put.entries, [{ a: 1 }], 'metadata: put');
  t.same(
    (
      await ok(
        rest.GET('/v1/revisions/{id}/metadata/{alias}', { params: { path: { id: revision.id, alias: 'notes' } } }),
      )
    ).entries,
    [{ a: 1 }],
    'metadata: get',
  );

  const limits = await ok(rest.GET('/v1/orgs/{id}/limits', { params: { path: { id: org.id } } }));
  t.ok(limits.groups.length > 0, 'limits: organization');

  const { api_key } = await ok(
    rest.POST('/v1/api-keys', { body: { target: 'organization', target_id: org.id, role: 'read', name: 'ci' } }),
  );
  t.match(api_key.key, /^wsk_/, 'api-keys: create shows the key once');
  const { api_keys } = await ok(
    rest.GET('/v1/api-keys/target/{target}/{target_id}', {
      params: { path: { target: 'organization', target_id: org.id } },
    }),
  );
  t.same(
    api_keys.map((k) => k.id),
    [api_key.id],
    'api-keys: list',
  );
  const keyed = createRestClient({ baseUrl: base, credential: { apiKey: api_key.key! } });
  t.equal(
    (await ok(keyed.GET('/v1/orgs/{id}', { params: { path: { id: org.id } } }))).org.id,
    org.id,
    'an API key credential',
  );
  await ok(rest.DELETE('/v1/api-keys', { body: { id: api_key.id } }));

  const { credential } = await ok(
    rest.POST('/v1/credentials', {
      body: { target: 'organization', target_id: org.id, name: 'smtp', secret: 's3cret' },
    }),
  );
  t.equal(credential.name, 'smtp', 'credentials: create');
  await ok(rest.DELETE('/v1/credentials', { body: { id: credential.id } }));

  const { members } = await ok(
    rest.GET('/v1/members/target/{target}/{target_id}', {
      params: { path: { target: 'organization', target_id: org.id } },
    }),
  );
  t.ok(Array.isArray(members), 'members: list');

  const session = await ok(
    rest.POST('/v1/revisions/{revision_id}/create_session', {
      params: { path: { revision_id: revision.id } },
      body: { alias: 'support-42' },
    }),
  );
  t.match(session, { session: { alias: 'support-42' } }, 'commands: create_session over REST');
  const verdict = await ok(
    rest.POST('/v1/revisions/{revision_id}/check_definition', {
      params: { path: { revision_id: revision.id } },
      body: { graph: GRAPH },
    }),
  );
  t.equal(verdict.status, 'success', 'commands: check_definition');

  t.equal(
    (await ok(rest.DELETE('/v1/blobs/{org_id}/{blob_id}', { params: { path: { org_id: org.id, blob_id: blob.id } } })))
      .blob.id,
    blob.id,
    'blobs: delete',
  );
  t.equal(
    (await ok(rest.DELETE('/v1/orgs/{id}', { params: { path: { id: org.id } } }))).org.id,
    org.id,
    'orgs: delete',
  );
});

t.test(
  'REST: service accounts and acting tokens, members, user targets and limits, blob metadata, binary session files',
  async (t) => {
    const anonymous = createRestClient({ baseUrl: base });
    const owner = await ok(anonymous.POST('/v1/auth/anonymous', { body: {} }));
    const rest = createRestClient({ baseUrl: base, credential: { token: owner.access_token } });
    const { org } = await ok(rest.POST('/v1/orgs', { body: { alias: uniqueAlias('org') } }));
    const { blob, revision } = await ok(
      rest.POST('/v1/blobs/{org_id}', {
        params: { path: { org_id: org.id } },
        body: { type: 'svc.compute.workflow', alias: uniqueAlias('blob') },
      }),
    );

    const { user: robot } = await ok(rest.POST('/v1/users', { body: { name: 'robot' } }));
    t.equal(robot.name, 'robot', 'users: a service account');
    const { users } = await ok(
      rest.GET('/v1/users/target/{target}/{target_id}', { params: { path: { target: 'user', target_id: 'me' } } }),
    );
    t.same(
      users.map((u) => u.user.id),
      [robot.id],
      'users: owned service accounts',
    );
    const { acting_token } = await ok(rest.POST('/v1/auth/core/impersonate', { body: { user_id: robot.id } }));
    const acting = createRestClient({ baseUrl: base, credential: { token: acting_token } });
    t.equal(
      (await ok(acting.GET('/v1/users/{user_id}', { params: { path: { user_id: 'me' } } }))).user.id,
      robot.id,
      'impersonate: the acting token is the service account',
    );

    const { member } = await ok(
      rest.POST('/v1/members', {
        body: { target: 'organization', target_id: org.id, user_id: robot.id, role: 'read' },
      }),
    );
    t.equal(member.role, 'read', 'members: upsert');
    t.equal(
      (await ok(acting.GET('/v1/orgs/{id}', { params: { path: { id: org.id } } }))).org.id,
      org.id,
      'the member reads the organization',
    );
    await ok(rest.DELETE('/v1/members', { body: { target: 'organization', target_id: org.id, user_id: robot.id } }));

    const { groups } = await ok(rest.GET('/v1/users/{user_id}/limits', { params: { path: { user_id: 'me' } } }));
    t.ok(groups.length > 0, 'limits: user');
    t.ok(
      (
        await ok(
          rest.GET('/v1/blobs/{org_id}/{blob_id}/limits', { params: { path: { org_id: org.id, blob_id: blob.id } } }),
        )
      ).groups.length > 0,
      'limits: blob',
    );
    await ok(
      rest.PUT('/v1/blobs/{org_id}/{blob_id}/metadata/{alias}', {
        params: { path: { org_id: org.id, blob_id: blob.id, alias: 'tags' } },
        body: { entries: ['a', 'b'] },
      }),
    );
    t.same(
      (
        await ok(
          rest.GET('/v1/blobs/{org_id}/{blob_id}/metadata/{alias}', {
            params: { path: { org_id: org.id, blob_id: blob.id, alias: 'tags' } },
          }),
        )
      ).entries,
      ['a', 'b'],
      'metadata: blob',
    );

    // The binary routes: bytes in the body with the params in X-Request-Body, bytes back with the
    // envelope in X-Response-Body.
    const created: Record<string, any> = await ok(
      rest.POST('/v1/revisions/{revision_id}/create_session', {
        params: { path: { revision_id: revision.id } },
        body: {},
      }),
    );
    const session: { id: string } = created.session;
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const uploaded = await ok(
      rest.POST('/v1/revisions/{revision_id}/upload_session_file', {
        params: {
          path: { revision_id: revision.id },
          header: {
            'x-request-body': JSON.stringify({
              session_id: session.id,
              alias: 'blob.bin',
              content_type: 'application/x-test',
            }),
          },
        },
        body: bytes as unknown as string,
        bodySerializer: (body) => body,
        headers: { 'content-type': 'application/octet-stream' },
      }),
    );
    t.match(uploaded, { object: { alias: 'blob.bin', size: 5 } }, 'session files: upload');
    const download = await rest.POST('/v1/revisions/{revision_id}/download_session_file', {
      params: { path: { revision_id: revision.id } },
      body: { session_id: session.id, alias: 'blob.bin' },
      parseAs: 'arrayBuffer',
    });
    t.equal(download.response.status, 200);
    t.same([...new Uint8Array(download.data as ArrayBuffer)], [...bytes], 'session files: download');
    t.match(JSON.parse(download.response.headers.get('x-response-body')!), {
      status: 'success',
      size: 5,
      content_type: 'application/x-test',
    });

    // An ONNX model, streamed up with its size declared and back byte for byte.
    const model = addModel();
    const onnx = await ok(
      rest.POST('/v1/blobs/{org_id}', {
        params: { path: { org_id: org.id } },
        body: { type: 'svc.model.onnx', alias: uniqueAlias('model') },
      }),
    );
    const stored = await ok(
      rest.PUT('/v1/revisions/{revision_id}/model', {
        params: {
          path: { revision_id: onnx.revision.id },
          header: { 'x-request-body': JSON.stringify({ size: model.length }) },
        },
        body: model as unknown as string,
        bodySerializer: (body) => body,
        headers: { 'content-type': 'application/octet-stream' },
      }),
    );
    t.match(stored, { status: 'success' }, 'models: upload');
    const fetched = await rest.GET('/v1/revisions/{revision_id}/model', {
      params: { path: { revision_id: onnx.revision.id } },
      parseAs: 'arrayBuffer',
    });
    t.equal(fetched.response.status, 200);
    t.ok(Buffer.from(fetched.data as ArrayBuffer).equals(model), 'models: download, byte for byte');

    await ok(rest.DELETE('/v1/users/{user_id}', { params: { path: { user_id: robot.id } } }));
  },
);

t.test('REST: refusals are ApiError with error, message and limit', async (t) => {
  const anonymous = createRestClient({ baseUrl: base });
  const { access_token } = await ok(anonymous.POST('/v1/auth/anonymous', { body: {} }));
  const rest = createRestClient({ baseUrl: base, credential: { token: access_token } });
  await ok(rest.POST('/v1/orgs', { body: { alias: uniqueAlias('org') } }));
  const error = await refusal(ok(rest.POST('/v1/orgs', { body: { alias: uniqueAlias('org') } })));
  t.equal(error.error, 'limit_exceeded');
  t.equal(error.status, 400);
  t.same(error.limit, { id: 'platform.orgs_per_user', value: 1, held: 1 });
  t.match(error.describe(), /^limit_exceeded: .+ \(limit platform\.orgs_per_user = 1, held 1\)$/);

  const missing = await refusal(ok(rest.GET('/v1/orgs/{id}', { params: { path: { id: 'no-such-org' } } })));
  t.equal(missing.error, 'not_found');
  t.equal(missing.status, 404);
  t.equal(missing.limit, undefined);
});

t.test('REST: every create carries an Idempotency-Key, and a retry resends the same one', async (t) => {
  const seen: Array<{ method: string; path: string; key: string | null }> = [];
  let failNext = true;
  const fetchSpy = async (request: Request): Promise<Response> => {
    seen.push({
      method: request.method,
      path: new URL(request.url).pathname,
      key: request.headers.get('idempotency-key'),
    });
    // The first create is answered 503 as a database outage would be; the client retries it.
    if (failNext && request.method === 'POST' && new URL(request.url).pathname === '/v1/orgs') {
      failNext = false;
      return new Response(JSON.stringify({ status: 'failure', error: 'unavailable', message: 'down' }), {
        status: 503,
        headers: { 'retry-after': '0', 'content-type': 'application/json' },
      });
    }
    return fetch(request);
  };
  const anonymous = createRestClient({ baseUrl: base, fetch: fetchSpy });
  const { access_token } = await ok(anonymous.POST('/v1/auth/anonymous', { body: {} }));
  const rest = createRestClient({ baseUrl: base, credential: { token: access_token }, fetch: fetchSpy });
  const { org } = await ok(rest.POST('/v1/orgs', { body: { alias: uniqueAlias('org') } }));
  const { revision } = await ok(
    rest.POST('/v1/blobs/{org_id}', {
      params: { path: { org_id: org.id } },
      body: { type: 'svc.compute.workflow', alias: uniqueAlias('blob') },
    }),
  );
  await ok(
    rest.POST('/v1/revisions/{revision_id}/create_session', {
      params: { path: { revision_id: revision.id } },
      body: {},
    }),
  );
  await ok(rest.GET('/v1/orgs/{id}', { params: { path: { id: org.id } } }));

  const orgPosts = seen.filter((s) => s.path === '/v1/orgs');
  t.equal(orgPosts.length, 2, 'the 503 was retried once');
  t.match(orgPosts[0]!.key, /^[0-9a-f-]{36}$/);
  t.equal(orgPosts[1]!.key, orgPosts[0]!.key, 'the retry kept its key');
  t.match(seen.find((s) => s.path.startsWith('/v1/blobs/'))!.key, /^[0-9a-f-]{36}$/, 'Create Blob');
  t.match(seen.find((s) => s.path.endsWith('/create_session'))!.key, /^[0-9a-f-]{36}$/, 'a creating command');
  t.equal(seen.find((s) => s.method === 'GET')!.key, null, 'reads carry none');
  t.equal(seen.find((s) => s.path === '/v1/auth/anonymous')!.key, null, 'nor sign-in');
});

/** The ApiError `pending` rejects with; fails when it resolves or rejects with anything else. */
async function refusal(pending: Promise<unknown>): Promise<ApiError> {
  try {
    await pending;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected a refusal, got an answer');
}

/** A signed-in user with an organization and a workflow revision, made over REST. */
async function workspace() {
  const caller = await signInAnonymous(app);
  const rest = createRestClient({ baseUrl: base, credential: { token: caller.token } });
  const { org } = await ok(rest.POST('/v1/orgs', { body: { alias: uniqueAlias('org') } }));
  const { blob, revision } = await ok(
    rest.POST('/v1/blobs/{org_id}', {
      params: { path: { org_id: org.id } },
      body: { type: 'svc.compute.workflow', alias: uniqueAlias('blob') },
    }),
  );
  return { caller, rest, org, blob, revision };
}

t.test(
  'WebSocket: typed commands with a bearer token in the sub-protocol, the API key in a header and in the sub-protocol',
  async (t) => {
    const { caller, rest, org, revision } = await workspace();
    const url = socketUrlOf(base);
    const rpc = await RpcClient.connect({ url, credential: { token: caller.token } });
    t.teardown(() => rpc.close());
    t.equal(rpc.protocol, 'authorization.bearer.base64');
    const { session } = await rpc.call('create_session', { revision_id: revision.id, alias: 'ws-session' });
    t.equal(session.alias, 'ws-session');
    t.equal((await rpc.call('get_user', { user_id: 'me' })).user.id, caller.user.id);

    const { api_key } = await ok(
      rest.POST('/v1/api-keys', { body: { target: 'organization', target_id: org.id, role: 'read' } }),
    );
    for (const form of ['header', 'subprotocol'] as const) {
      const keyed = await RpcClient.connect({ url, credential: { apiKey: api_key.key! }, form });
      t.equal(keyed.protocol, form === 'header' ? '' : 'x-api-key.base64', `${form} form`);
      t.equal(
        (await keyed.call('get_session', { revision_id: revision.id, session_id: 'ws-session' })).session.id,
        session.id,
      );
      await keyed.close();
    }
    const refused = await refusal(RpcClient.connect({ url, credential: { apiKey: 'wsk_nope' } }));
    t.equal(refused.error, 'unauthorized', 'a refused upgrade rejects connect with the refusal');
    t.equal(refused.status, 401);
    const unreachable = await RpcClient.connect({
      url: 'ws://127.0.0.1:9/v1',
      credential: { apiKey: 'wsk_nope' },
    }).then(
      () => null,
      (error: unknown) => error,
    );
    t.ok(unreachable instanceof ConnectionError, 'nothing listening: ConnectionError');
  },
);

t.test('WebSocket: where the platform has no global WebSocket (Node 20), the ws package is used', async (t) => {
  const { caller, revision } = await workspace();
  const platform = Object.getOwnPropertyDescriptor(globalThis, 'WebSocket')!;
  delete (globalThis as { WebSocket?: unknown }).WebSocket;
  t.teardown(() => Object.defineProperty(globalThis, 'WebSocket', platform));
  for (const form of ['header', 'subprotocol'] as const) {
    const rpc = await RpcClient.connect({ url: socketUrlOf(base), credential: { token: caller.token }, form });
    const { session } = await rpc.call('create_session', { revision_id: revision.id });
    t.equal(
      (await rpc.call('get_session', { revision_id: revision.id, session_id: session.id })).session.id,
      session.id,
      `${form} form`,
    );
    await rpc.close();
  }
});

t.test('WebSocket: batches answer per entry, refusals are typed', async (t) => {
  const { caller, blob, revision } = await workspace();
  const rpc = await RpcClient.connect({ url: socketUrlOf(base), credential: { token: caller.token }, form: 'header' });
  t.teardown(() => rpc.close());
  await setOverride(app, 'workflow.sessions_per_revision', 'blob', blob.id, 1);
  const outcomes = await rpc.batch([
    { method: 'create_session', params: { revision_id: revision.id, alias: 'first' } },
    { method: 'get_user', params: { user_id: 'me' }, notify: true },
    { method: 'create_session', params: { revision_id: revision.id, alias: 'second' } },
    { method: 'no_such_method', params: {} },
  ]);
  t.equal(outcomes.length, 3, 'one outcome per entry with an id');
  t.equal(outcomes[0]!.ok, true);
  const second = outcomes[1]!;
  t.equal(second.ok, false);
  if (!second.ok) {
    t.equal(second.error.error, 'limit_exceeded');
    t.equal(second.error.rpcCode, -32001);
    t.equal(second.error.status, 400);
    t.same(second.error.limit, { id: 'workflow.sessions_per_revision', value: 1, held: 1 });
  }
  const third = outcomes[2]!;
  t.equal(third.ok ? null : third.error.error, 'unknown_command');

  const error = await refusal(rpc.call('create_session', { revision_id: revision.id, alias: 'third' }));
  t.equal(error.error, 'limit_exceeded');
  t.equal(error.limit?.id, 'workflow.sessions_per_revision');
});

t.test("WebSocket: subscribe iterates an execution's events to its end", async (t) => {
  const { caller, revision } = await workspace();
  const rpc = await RpcClient.connect({ url: socketUrlOf(base), credential: { token: caller.token } });
  t.teardown(() => rpc.close());
  const { session } = await rpc.call('create_session', { revision_id: revision.id });
  const { definition } = await rpc.call('create_definition', {
    revision_id: revision.id,
    category: 'workflow',
    graph: GRAPH,
  });
  const { execution } = await rpc.call('create_execution', {
    revision_id: revision.id,
    session_id: session.id,
    definition_id: definition.id,
    input_data: { name: 'ada' },
  });
  // replay: the events the runner wrote before the subscription answered come first, once.
  const subscription = await rpc.subscribe({ revision_id: revision.id, execution_id: execution.id }, { replay: true });
  const kinds: string[] = [];
  for await (const event of subscription) {
    kinds.push(`${event.kind}${event.node ? `:${event.node}` : ''}`);
    if (event.kind === 'execution.finished') break;
  }
  t.same(kinds, [
    'execution.started',
    'node.started:greet',
    'node.finished:greet',
    'node.started:shout',
    'node.finished:shout',
    'execution.finished',
  ]);
  t.equal(subscription.ended, true, 'break unsubscribed');
  const done = await rpc.call('get_execution', { revision_id: revision.id, execution_id: execution.id });
  t.same(done.execution.output, { loud: 'ADA' });
});

t.test(
  'WebSocket: a dropped socket reconnects, resends reads and resubscribes without losing or repeating events',
  async (t) => {
    const { caller, rest, revision } = await workspace();
    const states: string[] = [];
    const rpc = await RpcClient.connect({
      url: socketUrlOf(base),
      credential: { token: () => caller.token },
      reconnect: { delayMs: 100 },
      onStateChange: (state) => states.push(state),
    });
    t.teardown(() => rpc.close());
    const { session } = await rpc.call('create_session', { revision_id: revision.id, alias: 'live' });
    const subscription = await rpc.subscribe({ revision_id: revision.id, session_id: session.id });
    const received: EventRecord[] = [];
    const reading = (async () => {
      for await (const event of subscription) {
        received.push(event);
        if (event.kind === 'object.written' && (event.attributes as { alias?: string }).alias === 'after') break;
      }
    })();

    const upload = (alias: string) =>
      ok(
        rest.POST('/v1/revisions/{revision_id}/upload_session_object', {
          params: { path: { revision_id: revision.id } },
          body: { session_id: session.id, alias, value: alias },
        }),
      );
    await upload('before');
    await waitFor(
      async () => received.length,
      (n) => n >= 1,
      'the first push',
    );
    const oldId = subscription.id;
    rpc.drop();
    // Written while the socket is down (or just back): read from the listing after resubscribing.
    await upload('during');
    // A read sent while reconnecting waits for the new socket and is answered there.
    t.equal((await rpc.call('get_session', { revision_id: revision.id, session_id: 'live' })).session.id, session.id);
    await waitFor(
      async () => rpc.reconnects,
      (n) => n === 1,
      'the reconnect',
    );
    await waitFor(
      async () => subscription.id,
      (id) => id !== oldId,
      'the resubscribe',
    );
    await upload('after');
    await reading;

    const aliases = received
      .filter((e) => e.kind === 'object.written')
      .map((e) => (e.attributes as { alias: string }).alias);
    t.same(aliases, ['before', 'during', 'after'], 'each event once, in order');
    const ids = received.map((e) => BigInt(e.id));
    t.same(
      ids,
      [...ids].sort((a, b) => (a < b ? -1 : 1)),
      'ids increase',
    );
    t.same(states, ['reconnecting', 'open']);
  },
);

t.test(
  'WebSocket: creates carry idempotency_key; a create in flight when the socket drops is sent again with its key and made once',
  async (t) => {
    const { caller, revision } = await workspace();
    const frames: Array<{ method?: string; params?: Record<string, unknown> }> = [];
    // Node's WebSocket, with every frame the client sends recorded.
    const createSocket: SocketFactory = (url, protocols, headers) => {
      const socket = new WebSocket(url, headers ? { protocols, headers } : protocols);
      const send = socket.send.bind(socket);
      socket.send = (data: string) => {
        frames.push(JSON.parse(data));
        send(data);
      };
      return socket;
    };
    const rpc = await RpcClient.connect({
      url: socketUrlOf(base),
      credential: { token: () => caller.token },
      form: 'header',
      createSocket,
      reconnect: { delayMs: 50 },
    });
    t.teardown(() => rpc.close());
    const creating = rpc.call('create_session', { revision_id: revision.id, alias: 'made-once' });
    rpc.drop();
    const { session } = await creating;
    const sent = frames.filter((frame) => frame.method === 'create_session');
    t.equal(sent.length, 2, 'sent, then sent again on the new socket');
    t.match(sent[0]!.params!.idempotency_key, /^[0-9a-f-]{36}$/);
    t.equal(sent[1]!.params!.idempotency_key, sent[0]!.params!.idempotency_key, 'with the same key');
    const { sessions } = await rpc.call('list_sessions', { revision_id: revision.id });
    t.same(
      sessions.map((s) => s.id),
      [session.id],
      'one session',
    );
    t.equal(
      frames.find((frame) => frame.method === 'list_sessions')!.params!.idempotency_key,
      undefined,
      'reads carry no key',
    );
  },
);
