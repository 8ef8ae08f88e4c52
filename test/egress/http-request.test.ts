/**
 * Outside calls through the API: `http.request` nodes and `ctx.fetch` / `ctx.credentials.get` in
 * `logic.code`, under the egress policy, with stored credentials redacted from everything the runs
 * leave behind. Nothing here can leave the machine: names resolve through the runner's test seam
 * only, the seam opens sockets to 127.0.0.1 only whatever the policy says, and the policy exempts
 * 127.0.0.1 (the operator setting `EGRESS_ALLOW_ADDRESSES`) for the test server alone.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { EGRESS_DEFAULTS } from '../../shared/egress/policy.ts';
import { buildTestApp, call, setOverride, signInAnonymous } from '../helpers/app.ts';
import { createBlob } from '../helpers/resources.ts';
import {
  command,
  createWorkflow,
  define,
  executionEvents,
  getExecution,
  runGraph,
  startExecution,
  startEngine,
  waitFor,
  waitForEnd,
  type Workflow,
} from '../helpers/runner.ts';

const SECRET = 'tok_9f8e7d6c5b4a3921-egress';
const SECRET_B64 = Buffer.from(SECRET).toString('base64');

/** What the test server saw: each request's path, org header and authorization. */
const seen: Array<{ path: string; org: string | undefined; authorization: string | undefined }> = [];
const held: ServerResponse[] = [];
let onHeld: () => void = () => {};
function handle(req: IncomingMessage, res: ServerResponse): void {
  const path = req.url ?? '/';
  seen.push({ path, org: req.headers['x-org'] as string | undefined, authorization: req.headers.authorization });
  if (path.startsWith('/hold')) {
    held.push(res);
    onHeld();
    return;
  }
  if (path.startsWith('/to-private')) {
    res.statusCode = 302;
    res.setHeader('location', 'http://10.9.8.7/inside');
    res.end();
    return;
  }
  if (path.startsWith('/missing')) {
    res.statusCode = 404;
    res.end('no such thing');
    return;
  }
  // Echoes what it got, the credential included, as a careless API would.
  res.setHeader('content-type', 'application/json');
  res.setHeader('x-echo', req.headers.authorization ?? '');
  res.end(JSON.stringify({ path, authorization: req.headers.authorization ?? null, b64: SECRET_B64 }));
}
const server = createServer(handle);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => {
  for (const res of held) res.end();
  server.closeAllConnections();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});
const port = (server.address() as AddressInfo).port;
const base = `http://127.0.0.1:${port}`;

const { app, databaseUrl } = await buildTestApp(t);
await startEngine(t, databaseUrl, {
  outside: {
    egress: { ...EGRESS_DEFAULTS, allowAddresses: ['127.0.0.1/32'], callsPerOrg: 2 },
    credentialKey: 'test-credential-key-0123456789abcdef01234567',
    testSeam: {
      hosts: { 'api.test': ['127.0.0.1'], 'intranet.test': ['10.0.0.8'], 'mapped.test': ['::ffff:192.168.1.1'] },
      connectOnly: ['127.0.0.1'],
    },
  },
});
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);
const flow = await createWorkflow(app, alice);
const other = await createWorkflow(app, bob);
await setOverride(app, 'workflow.running_executions_per_org', 'org', flow.orgId, 1000);
await setOverride(app, 'workflow.definitions_per_revision', 'org', flow.orgId, 1000);

async function storeCredential(caller = alice, f: Workflow = flow, name = 'api', secret = SECRET): Promise<void> {
  const res = await call(app, 'POST', '/v1/credentials', {
    as: caller,
    body: { target: 'organization', target_id: f.orgId, name, secret },
  });
  if (res.status !== 201) throw new Error(`store credential: ${res.status} ${JSON.stringify(res.body)}`);
}
await storeCredential();

/** One node's graph; its failure route is left out, so a failure fails the execution. */
function oneNode(processor: string, config: unknown) {
  return { start: 'call', nodes: { call: { processor, config } } };
}

/** Runs `graph` to its end; answers the execution and every event of it. */
async function run(graph: unknown, input?: unknown, f = flow, caller = alice) {
  const started = await runGraph(app, caller, f, graph, input);
  const execution = await waitForEnd(app, caller, f, started.id);
  return { execution, events: await executionEvents(app, caller, f, started.id) };
}

/** Everything an execution left readable through the API, as one text. */
async function everything(f: Workflow, caller: typeof alice): Promise<string> {
  const events = (await command(app, caller, f.rev, 'list_session_events', { session_id: f.sessionId, limit: 200 }))
    .events;
  const executions = (await command(app, caller, f.rev, 'list_executions', { session_id: f.sessionId })).executions;
  const objects = await command(app, caller, f.rev, 'list_session_objects', { session_id: f.sessionId });
  return JSON.stringify({ events, executions, objects });
}

t.test('http.request with a stored credential in a header: the server gets it, nothing keeps it', async (t) => {
  const { execution, events } = await run(
    oneNode('http.request', {
      url: `${base}/echo/{{input.id}}`,
      headers: { authorization: 'Bearer {{credentials.api}}' },
    }),
    { id: 'a b' },
  );
  t.equal(execution.status, 'succeeded');
  const last = seen.at(-1)!;
  t.equal(last.authorization, `Bearer ${SECRET}`, 'the server received the secret');
  t.equal(last.path, '/echo/a%20b', 'input placeholders in the URL are percent-encoded');
  t.same(execution.output.status, 200);
  t.same(execution.output.body, {
    path: '/echo/a%20b',
    authorization: 'Bearer [redacted]',
    b64: '[redacted]',
  });
  t.equal(execution.output.headers['x-echo'], 'Bearer [redacted]');
  t.ok(events.some((e) => e.kind === 'node.finished'));
  const all = await everything(flow, alice);
  t.notOk(all.includes(SECRET), 'the secret is in no event, execution or output');
  t.notOk(all.includes(SECRET_B64.replace(/=+$/, '')), 'nor its base64');
});

t.test('a status outside expected_statuses takes failure with http_status', async (t) => {
  const { execution } = await run(oneNode('http.request', { url: `${base}/missing` }));
  t.equal(execution.status, 'failed');
  t.equal(execution.error.code, 'http_status');
  const allowed = await run(oneNode('http.request', { url: `${base}/missing`, expected_statuses: [404] }));
  t.equal(allowed.execution.status, 'succeeded');
});

t.test('every egress refusal is a clear node error, and no socket opens towards it', async (t) => {
  const before = seen.length;
  const cases: Array<[string, RegExp]> = [
    // 127.0.0.1 itself is exempted for this test's server; the rest of loopback is not.
    ['http://127.0.0.2/', /loopback/],
    ['http://10.1.2.3/', /private/],
    ['http://169.254.169.254/latest/meta-data/', /cloud-metadata/],
    ['http://[::1]/', /loopback/],
    ['http://[::ffff:10.0.0.1]/', /private/],
    ['http://[::ffff:7f00:2]/', /loopback/],
    ['http://2130706434/', /loopback/],
    ['http://0177.0.0.2/', /loopback/],
    ['http://0x0a.0.0.1/', /private/],
    ['http://intranet.test/', /resolves to a private/],
    ['http://mapped.test/', /resolves to a private/],
    [`${base}/to-private`, /^A redirect was refused: .*private/],
  ];
  const definition = await define(app, alice, flow, oneNode('http.request', { url: '{{input.url}}' }));
  const started = await Promise.all(cases.map(([url]) => startExecution(app, alice, flow, definition, { url })));
  for (const [i, [url, message]] of cases.entries()) {
    const execution = await waitForEnd(app, alice, flow, started[i]!.id);
    const events = await executionEvents(app, alice, flow, started[i]!.id);
    t.equal(execution.status, 'failed', url);
    t.equal(execution.error.code, 'egress_refused', url);
    t.match(execution.error.message, message, url);
    t.ok(events.some((e) => e.kind === 'node.failed' && e.attributes.error.code === 'egress_refused'));
  }
  t.same(
    seen.slice(before).map((s) => s.path),
    ['/to-private'],
    'only the redirecting test server was reached',
  );
});

t.test('credentials: a credential of another organization is never visible', async (t) => {
  const { execution } = await run(
    oneNode('http.request', { url: `${base}/echo`, headers: { authorization: '{{credentials.api}}' } }),
    undefined,
    other,
    bob,
  );
  t.equal(execution.status, 'failed');
  t.equal(execution.error.code, 'not_found');
  t.match(execution.error.message, /No credential named api/);
});

t.test('an admin may restrict an organization credential to named blobs', async (t) => {
  const { blob: elsewhere } = await createBlob(app, alice, flow.orgId);
  const store = (body: Record<string, unknown>) =>
    call(app, 'POST', '/v1/credentials', {
      as: alice,
      body: { target: 'organization', target_id: flow.orgId, ...body },
    });
  const narrow = await store({ name: 'narrow', secret: 'narrow-secret-1', blob_ids: [elsewhere.id] });
  t.equal(narrow.status, 201);
  t.same(narrow.body.credential.blob_ids, [elsewhere.id]);
  t.equal((await store({ name: 'mine', secret: 'mine-secret-1', blob_ids: [flow.blobId] })).status, 201);
  const read = (name: string) =>
    run(oneNode('logic.code', { code: `export default async (input, ctx) => ctx.credentials.get('${name}')` }));
  const refused = await read('narrow');
  t.equal(refused.execution.error.code, 'not_found', 'restricted to another blob: not visible here');
  const allowed = await read('mine');
  t.equal(allowed.execution.status, 'succeeded');
  t.equal(allowed.execution.output, '[redacted]');
  const foreign = await store({ name: 'foreign', secret: 'x-secret-1', blob_ids: [other.blobId] });
  t.equal(foreign.status, 404);
  t.equal(foreign.body.error, 'not_found');
  const onBlob = await call(app, 'POST', '/v1/credentials', {
    as: alice,
    body: { target: 'blob', target_id: flow.blobId, name: 'b', secret: 'blob-secret-1', blob_ids: [flow.blobId] },
  });
  t.equal(onBlob.status, 400);
  t.equal(onBlob.body.error, 'invalid_request_body');
});

t.test('check_definition checks http.request configs and their placeholders', async (t) => {
  const verdict = await command(app, alice, flow.rev, 'check_definition', {
    graph: oneNode('http.request', { url: 'https://api.example.com/{{secrets.x}}', method: 'GET', body: 'x' }),
  });
  t.equal(verdict.status, 'failure');
  t.same(verdict.errors.map((e: { code: string; field: string }) => [e.code, e.field]).sort(), [
    ['invalid_config', 'config.method'],
    ['invalid_config', 'config.url'],
  ]);
});

t.test('ctx.fetch and ctx.credentials.get in logic.code, redacted in output, logs and errors', async (t) => {
  const code = `export default async (input, ctx) => {
    const secret = await ctx.credentials.get('api');
    const res = await ctx.fetch('${base}/echo', { headers: { authorization: 'Bearer ' + secret } });
    const body = await res.json();
    ctx.log('using', secret, body.b64);
    let refused;
    try { await ctx.fetch('http://169.254.169.254/'); } catch (e) { refused = { code: e.code, message: e.message }; }
    await ctx.objects.put('kept', { secret });
    return { status: res.status, ok: res.ok, type: res.headers.get('Content-Type'), body, refused, raw: secret };
  }`;
  const { execution, events } = await run(oneNode('logic.code', { code }));
  t.equal(execution.status, 'succeeded', JSON.stringify(execution.error));
  const finished = events.find((e) => e.kind === 'node.finished');
  const output = execution.output;
  t.equal(output.status, 200);
  t.equal(output.ok, true);
  t.equal(output.type, 'application/json');
  t.equal(output.raw, '[redacted]');
  t.equal(output.body.authorization, 'Bearer [redacted]');
  t.equal(output.refused.code, 'egress_refused');
  t.match(output.refused.message, /cloud-metadata/);
  t.match(finished.attributes.logs[0].message, /^using \[redacted\] \[redacted\]$/);
  t.equal(seen.at(-1)!.authorization, `Bearer ${SECRET}`);
  const all = await everything(flow, alice);
  t.notOk(all.includes(SECRET), 'the secret is in no event, object, execution or output');

  const failing = await run(
    oneNode('logic.code', {
      code: `export default async (input, ctx) => { throw new Error('bad ' + await ctx.credentials.get('api')); }`,
    }),
  );
  t.equal(failing.execution.status, 'failed');
  t.equal(failing.execution.error.message, 'Error: bad [redacted]');
  const missing = await run(
    oneNode('logic.code', { code: `export default async (input, ctx) => ctx.credentials.get('nope')` }),
  );
  t.equal(missing.execution.error.code, 'not_found');
});

t.test('one organization held to its calls at once, another not slowed', async (t) => {
  let arrived!: () => void;
  const two = new Promise<void>((resolve) => (arrived = resolve));
  onHeld = () => {
    if (held.length === 2) arrived();
  };
  const graph = oneNode('http.request', { url: `${base}/hold`, headers: { 'x-org': 'busy' } });
  const busy = await Promise.all([1, 2, 3].map(() => runGraph(app, alice, flow, graph)));
  await two;
  // Two calls of the busy organization reached the server; the third waits for a slot.
  const quiet = await run(
    oneNode('http.request', { url: `${base}/echo`, headers: { 'x-org': 'quiet' } }),
    undefined,
    other,
    bob,
  );
  t.equal(quiet.execution.status, 'succeeded', 'the other organization went through');
  t.equal(seen.filter((s) => s.org === 'busy').length, 2, 'the server saw two calls of the busy one');
  const states = await Promise.all(busy.map((e) => getExecution(app, alice, flow, e.id)));
  t.same(
    states.map((e) => e.status),
    ['running', 'running', 'running'],
    'all three still run (the third waiting for its slot)',
  );
  onHeld = () => {
    for (const res of held.splice(0)) res.end('{}');
  };
  onHeld();
  const ended = await Promise.all(busy.map((e) => waitForEnd(app, alice, flow, e.id)));
  t.same(
    ended.map((e) => e.status),
    ['succeeded', 'succeeded', 'succeeded'],
  );
  await waitFor(
    async () => seen.filter((s) => s.org === 'busy').length,
    (n) => n === 3,
    'the third call',
  );
});
