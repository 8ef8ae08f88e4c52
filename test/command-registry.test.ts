import t from 'tap';
import { z } from 'zod';
import { defineCommand } from '../control-plane/commands/command.ts';
import { COMMANDS, createCommandRegistry } from '../control-plane/commands/registry.ts';
import { fail } from '../shared/errors.ts';
import { buildTestApp, call, signInAnonymous, type Caller } from './helpers/app.ts';
import { connect, wsUrl, type RpcClient } from './helpers/ws-client.ts';

// Commands that exist only in this file: they drive every path of the registry through both transports.
let closed: (connectionId: string) => void = () => {};
const testCommands = [
  defineCommand({
    name: 'echo_params',
    blobTypes: ['svc.compute.workflow'],
    role: 'read',
    params: z.strictObject({ n: z.number().int(), text: z.string().optional() }),
    async handler(_ctx, principal, params, call) {
      return {
        params,
        revision_id: call.revision.revision.id,
        blob_type: call.revision.blob.type,
        caller: principal.userId,
        over_socket: call.connection !== null,
      };
    },
  }),
  defineCommand({
    name: 'write_thing',
    blobTypes: ['svc.compute.workflow'],
    role: 'write',
    params: z.strictObject({ value: z.string() }),
    async handler(_ctx, _principal, params) {
      return { written: params.value };
    },
  }),
  defineCommand({
    name: 'graph_only',
    blobTypes: ['svc.graph.graphdb'],
    role: 'read',
    params: z.strictObject({}),
    async handler() {
      return { graph: true };
    },
  }),
  defineCommand({
    name: 'refuse_with_limit',
    blobTypes: ['svc.compute.workflow'],
    role: 'read',
    params: z.strictObject({}),
    async handler() {
      fail('limit_exceeded', 'The revision holds 30 sessions.', {
        limit: { id: 'workflow.sessions_per_revision', value: 30, held: 30 },
      });
    },
  }),
  defineCommand({
    name: 'explode',
    blobTypes: ['svc.compute.workflow'],
    role: 'read',
    params: z.strictObject({}),
    async handler() {
      throw new Error('boom: SELECT secret FROM users');
    },
  }),
  defineCommand({
    name: 'verdict',
    blobTypes: ['svc.compute.workflow'],
    role: 'read',
    params: z.strictObject({}),
    async handler() {
      return { status: 'failure', errors: [{ node: 'a', message: 'bad' }] };
    },
  }),
  defineCommand({
    name: 'push',
    params: z.strictObject({ n: z.number() }),
    async handler(_ctx, _principal, params, call) {
      const connection = call.connection;
      connection?.notify('test.pushed', { n: params.n });
      connection?.onClose(() => closed(connection.id));
      return { connection_id: connection?.id ?? null };
    },
  }),
];

const { app } = await buildTestApp(t, {}, { commands: [...COMMANDS, ...testCommands] });
const url = await wsUrl(app);
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);

async function revisionOf(
  caller: Caller,
  alias: string,
  type: string,
  visibility: 'private' | 'public',
): Promise<string> {
  const org = await call(app, 'POST', '/v1/orgs', { as: caller, body: { alias: `${alias}-org` } });
  if (org.status !== 201) throw new Error(`org: ${org.status} ${JSON.stringify(org.body)}`);
  const blob = await call(app, 'POST', `/v1/blobs/${org.body.org.id}`, {
    as: caller,
    body: { type, alias, visibility },
  });
  if (blob.status !== 201) throw new Error(`blob: ${blob.status} ${JSON.stringify(blob.body)}`);
  return blob.body.revision.id;
}

// Alice owns a public workflow revision (Bob may read it, not write it) and a graph revision.
const flow = await revisionOf(alice, 'reg-flow', 'svc.compute.workflow', 'public');
const graph = await revisionOf(alice, 'reg-graph', 'svc.graph.graphdb', 'private');

interface Outcome {
  rest: { status: number; body: any };
  rpc: any;
}

/** The same command, params and caller over both transports. */
async function both(
  t: any,
  caller: Caller,
  revision: string,
  command: string,
  params: unknown,
  client?: RpcClient,
): Promise<Outcome> {
  const rest = await call(app, 'POST', `/v1/revisions/${revision}/${command}`, { as: caller, body: params });
  const socket = client ?? (await connect(t, url, { headers: caller.headers }));
  const rpcParams =
    typeof params === 'object' && params !== null && !Array.isArray(params)
      ? { revision_id: revision, ...params }
      : params;
  const rpc = await socket.call({ jsonrpc: '2.0', id: 'x', method: command, params: rpcParams });
  return { rest: { status: rest.status, body: rest.body }, rpc };
}

/** REST failure and JSON-RPC error carry the same code, message, extras and status. */
function sameRefusal(t: any, outcome: Outcome, status: number, error: string, rpcCode: number): void {
  t.equal(outcome.rest.status, status);
  t.equal(outcome.rest.body.error, error);
  const { status: _s, ...envelope } = outcome.rest.body;
  t.same(outcome.rpc, {
    jsonrpc: '2.0',
    id: 'x',
    error: { code: rpcCode, message: envelope.message, data: { ...envelope, http_status: status } },
  });
}

t.test('a registry refuses a name defined twice', async (t) => {
  t.throws(() => createCommandRegistry([testCommands[0]!, testCommands[0]!]), /defined twice/);
  const pairs = COMMANDS.flatMap((c) => (c.blobTypes ?? ['-']).map((type) => `${c.name} ${type}`));
  t.equal(new Set(pairs).size, pairs.length, 'every shipped command has a distinct name per blob type');
  t.equal(
    createCommandRegistry(COMMANDS).get('list_executions', 'svc.compute.scheduler')?.blobTypes?.[0],
    'svc.compute.scheduler',
    'one name, a definition per blob type',
  );
  t.equal(
    createCommandRegistry(COMMANDS).get('list_executions', 'svc.compute.workflow')?.blobTypes?.[0],
    'svc.compute.workflow',
  );
  t.ok(createCommandRegistry(COMMANDS).names.includes('get_user'));
});

t.test(
  'success: REST wraps the result in the envelope, JSON-RPC returns it bare; revision_id never reaches the handler',
  async (t) => {
    const outcome = await both(t, bob, flow, 'echo_params', { n: 3, text: 'hi' });
    const result = {
      params: { n: 3, text: 'hi' },
      revision_id: flow,
      blob_type: 'svc.compute.workflow',
      caller: bob.user.id,
    };
    t.equal(outcome.rest.status, 200);
    t.same(outcome.rest.body, { status: 'success', ...result, over_socket: false });
    t.same(outcome.rpc, { jsonrpc: '2.0', id: 'x', result: { ...result, over_socket: true } });
  },
);

t.test('a command with no params needs no body over REST', async (t) => {
  const res = await app.inject({ method: 'POST', url: `/v1/revisions/${graph}/graph_only`, headers: alice.headers });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: 'success', graph: true });
});

t.test('a result that carries its own status keeps it on both transports (check_definition)', async (t) => {
  const outcome = await both(t, alice, flow, 'verdict', {});
  t.equal(outcome.rest.status, 200);
  t.same(outcome.rest.body, { status: 'failure', errors: [{ node: 'a', message: 'bad' }] });
  t.same(outcome.rpc.result, { status: 'failure', errors: [{ node: 'a', message: 'bad' }] });
});

t.test('a command of another blob type: 404 unknown_command / -32601', async (t) => {
  sameRefusal(t, await both(t, alice, flow, 'graph_only', {}), 404, 'unknown_command', -32601);
  sameRefusal(t, await both(t, alice, graph, 'echo_params', { n: 1 }), 404, 'unknown_command', -32601);
  // The type is checked before the params: bad params on the wrong type are still unknown_command.
  sameRefusal(t, await both(t, alice, graph, 'echo_params', { nope: 1 }), 404, 'unknown_command', -32601);
});

t.test('an unreadable revision is not_found before anything else, whatever the command', async (t) => {
  sameRefusal(t, await both(t, bob, graph, 'graph_only', {}), 404, 'not_found', -32001);
  sameRefusal(t, await both(t, bob, graph, 'no_such_command', {}), 404, 'not_found', -32001);
});

t.test('invalid params: 400 invalid_request_body / -32602 with the same message', async (t) => {
  sameRefusal(t, await both(t, alice, flow, 'echo_params', { n: 'three' }), 400, 'invalid_request_body', -32602);
  sameRefusal(t, await both(t, alice, flow, 'echo_params', { n: 1, extra: true }), 400, 'invalid_request_body', -32602);
  sameRefusal(t, await both(t, alice, flow, 'echo_params', {}), 400, 'invalid_request_body', -32602);
});

t.test('params that are not an object are invalid on both transports', async (t) => {
  const rest = await call(app, 'POST', `/v1/revisions/${flow}/echo_params`, { as: alice, body: [1] });
  t.equal(rest.status, 400);
  t.equal(rest.body.error, 'invalid_request_body');
  const client = await connect(t, url, { headers: alice.headers });
  const reply = await client.call({ jsonrpc: '2.0', id: 1, method: 'echo_params', params: [flow, 1] });
  t.equal(reply.error.code, -32602);
});

t.test('revision_id: required over JSON-RPC, refused in a REST body (the path carries it)', async (t) => {
  const client = await connect(t, url, { headers: alice.headers });
  const missing = await client.call({ jsonrpc: '2.0', id: 1, method: 'echo_params', params: { n: 1 } });
  t.match(missing.error, { code: -32602, data: { error: 'invalid_request_body', http_status: 400 } });
  const notString = await client.call({
    jsonrpc: '2.0',
    id: 2,
    method: 'echo_params',
    params: { revision_id: 5, n: 1 },
  });
  t.match(notString.error, { code: -32602, data: { error: 'invalid_request_body' } });
  const rest = await call(app, 'POST', `/v1/revisions/${flow}/echo_params`, {
    as: alice,
    body: { revision_id: flow, n: 1 },
  });
  t.equal(rest.status, 400);
  t.equal(rest.body.error, 'invalid_request_body');
});

t.test('readable but lacking the role: 403 forbidden / -32001, checked before the params', async (t) => {
  sameRefusal(t, await both(t, bob, flow, 'write_thing', { value: 'x' }), 403, 'forbidden', -32001);
  sameRefusal(t, await both(t, bob, flow, 'write_thing', { wrong: 1 }), 403, 'forbidden', -32001);
  const owner = await both(t, alice, flow, 'write_thing', { value: 'x' });
  t.same(owner.rest.body, { status: 'success', written: 'x' });
  t.same(owner.rpc.result, { written: 'x' });
});

t.test('a refusal carrying a limit: the limit object reaches both transports', async (t) => {
  const outcome = await both(t, alice, flow, 'refuse_with_limit', {});
  sameRefusal(t, outcome, 400, 'limit_exceeded', -32001);
  t.same(outcome.rpc.error.data.limit, { id: 'workflow.sessions_per_revision', value: 30, held: 30 });
});

t.test('a handler that throws: 500 internal_error / -32001, no detail leaks, the socket stays up', async (t) => {
  const client = await connect(t, url, { headers: alice.headers });
  const outcome = await both(t, alice, flow, 'explode', {}, client);
  sameRefusal(t, outcome, 500, 'internal_error', -32001);
  t.notMatch(JSON.stringify(outcome), /boom|SELECT|stack|at /);
  t.equal(
    (await client.call({ jsonrpc: '2.0', id: 'after', method: 'get_user', params: { user_id: 'me' } })).result.user.id,
    alice.user.id,
  );
});

t.test('command bodies may exceed the 1 MiB JSON limit, up to 8 MiB', async (t) => {
  const text = 'a'.repeat(2 * 1024 * 1024);
  const ok = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${flow}/echo_params`,
    headers: alice.headers,
    payload: { n: 1, text },
  });
  t.equal(ok.statusCode, 200);
  t.equal(ok.json().params.text.length, text.length);
  const tooBig = await app.inject({
    method: 'POST',
    url: `/v1/revisions/${flow}/echo_params`,
    headers: alice.headers,
    payload: { n: 1, text: 'a'.repeat(8 * 1024 * 1024) },
  });
  t.equal(tooBig.statusCode, 413);
  t.equal(tooBig.json().error, 'payload_too_large');
});

t.test('the connection hook: notify pushes a notification, onClose runs when the socket closes', async (t) => {
  const client = await connect(t, url, { headers: alice.headers });
  const closedId = new Promise<string>((resolve) => {
    closed = resolve;
  });
  client.send({ jsonrpc: '2.0', id: 'p', method: 'push', params: { n: 7 } });
  t.same(await client.next(), { jsonrpc: '2.0', method: 'test.pushed', params: { n: 7 } });
  const reply = await client.next();
  t.equal(reply.id, 'p');
  t.type(reply.result.connection_id, 'string');
  client.socket.close(1000);
  t.equal(await closedId, reply.result.connection_id);
});
