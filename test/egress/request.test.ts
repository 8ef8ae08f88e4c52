/**
 * The egress policy through its own seam: names are resolved by a test resolver to the addresses
 * under test, and the connect step opens sockets only to 127.0.0.1 (anything else fails the test
 * without a packet sent). Real connections go only to a server on 127.0.0.1, allowed by an
 * explicit exemption as an operator would set it.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { parseIp } from '../../shared/egress/addresses.ts';
import { EgressError } from '../../shared/egress/egress-error.ts';
import { EgressGate } from '../../shared/egress/gate.ts';
import { createEgressPolicy, EGRESS_DEFAULTS, parseOrgHosts } from '../../shared/egress/policy.ts';
import {
  egressRequest,
  socketConnect,
  type EgressConnect,
  type EgressRequest,
  type EgressResolver,
} from '../../shared/egress/request.ts';

const ORG = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';

/** The test's DNS: every name the tests use, and nothing else. */
const NAMES: Record<string, string[]> = {
  'public.test': ['93.184.216.34'],
  'private.test': ['10.1.2.3'],
  'mixed.test': ['93.184.216.34', '192.168.1.1'],
  'metadata.test': ['169.254.169.254'],
  'mapped.test': ['::ffff:10.0.0.1'],
  'local.test': ['127.0.0.1'],
};
const resolver: EgressResolver = async (name) => {
  const answers = NAMES[name];
  if (!answers) throw Object.assign(new Error(`unknown test name ${name}`), { code: 'ENOTFOUND' });
  return answers.map((a) => parseIp(a)!);
};

/** Connects only to loopback; records every address it was asked for. */
function guardedConnect(): EgressConnect & { asked: string[] } {
  const asked: string[] = [];
  const connect: EgressConnect = (target) => {
    asked.push(target.address);
    if (target.address !== '127.0.0.1') throw new Error(`the test refused to connect to ${target.address}`);
    return socketConnect(target);
  };
  return Object.assign(connect, { asked });
}

let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('ok');
const server = createServer((req, res) => handler(req, res));
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
const port = (server.address() as AddressInfo).port;
const local = `http://127.0.0.1:${port}`;

const strict = createEgressPolicy(EGRESS_DEFAULTS);
const loopbackAllowed = createEgressPolicy({ ...EGRESS_DEFAULTS, allowAddresses: ['127.0.0.1/32'] });

async function refusal(
  t: Test,
  request: Partial<EgressRequest> & { url: string },
  policy = strict,
): Promise<EgressError> {
  const connect = guardedConnect();
  try {
    await egressRequest({ orgId: ORG, ...request }, { policy, resolver, connect });
  } catch (error) {
    t.same(
      connect.asked.filter((a) => a !== '127.0.0.1'),
      [],
      'no socket towards a refused address',
    );
    if (error instanceof EgressError) return error;
    throw error;
  }
  throw new Error(`${request.url} was not refused`);
}

t.test('forbidden addresses are refused before any socket opens', async (t) => {
  const cases: [string, string][] = [
    ['http://127.0.0.1/', 'loopback'],
    ['http://127.5.6.7:8080/x', 'loopback'],
    ['http://10.0.0.1/', 'private'],
    ['http://172.16.3.4/', 'private'],
    ['http://192.168.0.1/', 'private'],
    ['http://100.64.0.1/', 'private'],
    ['http://169.254.169.254/latest/meta-data/', 'cloud_metadata'],
    ['http://169.254.1.1/', 'link_local'],
    ['http://[::1]/', 'loopback'],
    ['http://[::ffff:127.0.0.1]/', 'loopback'],
    ['http://[::ffff:a9fe:a9fe]/', 'cloud_metadata'],
    ['http://[64:ff9b::a00:1]/', 'private'],
    ['http://[2002:7f00:1::]/', 'loopback'],
    ['http://[fe80::1]/', 'link_local'],
    ['http://[fd00:ec2::254]/', 'cloud_metadata'],
    ['http://[fc00::5]/', 'private'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://[ff02::1]/', 'multicast'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://[::]/', 'unspecified'],
    ['http://2130706433/', 'loopback'],
    ['http://0177.0.0.1/', 'loopback'],
    ['http://0x7f.1/', 'loopback'],
    ['http://017700000001/', 'loopback'],
    ['http://012.1/', 'private'],
    ['http://private.test/', 'private'],
    ['http://mixed.test/', 'private'],
    ['http://metadata.test/', 'cloud_metadata'],
    ['http://mapped.test/', 'private'],
    ['http://local.test/', 'loopback'],
  ];
  for (const [url, reason] of cases) {
    const error = await refusal(t, { url });
    t.equal(error.code, 'egress_refused', url);
    t.equal(error.reason, reason, url);
  }
});

t.test('URLs, methods and headers the policy refuses', async (t) => {
  t.equal((await refusal(t, { url: 'file:///etc/passwd' })).reason, 'scheme');
  t.equal((await refusal(t, { url: 'gopher://public.test/' })).reason, 'scheme');
  t.equal((await refusal(t, { url: 'not a url' })).reason, 'invalid_url');
  t.equal((await refusal(t, { url: 'http://user:pw@public.test/' })).reason, 'invalid_url');
  t.equal((await refusal(t, { url: 'http://public.test/', headers: { Host: 'x' } })).reason, 'forbidden_header');
  t.equal((await refusal(t, { url: 'http://public.test/', body: 'x' })).reason, 'invalid_request');
  const dns = await refusal(t, { url: 'http://nowhere.test/' });
  t.equal(dns.code, 'egress_failed');
  t.equal(dns.reason, 'dns');
});

t.test('an organization with an allow-list reaches only its hosts', async (t) => {
  const policy = createEgressPolicy({
    ...EGRESS_DEFAULTS,
    allowAddresses: ['127.0.0.1'],
    orgHosts: parseOrgHosts(`${ORG}=local.test,*.example.com`),
  });
  const refused = await refusal(t, { url: 'http://public.test/' }, policy);
  t.equal(refused.reason, 'host_not_allowed');
  t.equal((await refusal(t, { url: 'http://example.com/' }, policy)).reason, 'host_not_allowed');
  const answer = await egressRequest(
    { orgId: ORG, url: `http://local.test:${port}/` },
    { policy, resolver, connect: guardedConnect() },
  );
  t.equal(answer.status, 200);
  // Another organization has no allow-list: any public host, still no forbidden address.
  t.ok(policy.hostAllowed(OTHER, 'public.test'));
  t.throws(() => parseOrgHosts('not-an-org=x'), /organization id/);
});

t.test('a call to a loopback server exempted by the operator', async (t) => {
  handler = (req, res) => {
    res.setHeader('x-seen', `${req.method} ${req.url} ${req.headers.host} ${req.headers.authorization}`);
    res.end('hello');
  };
  const answer = await egressRequest(
    { orgId: ORG, url: `${local}/a?b=1`, headers: { Authorization: 'Bearer s3cret' } },
    { policy: loopbackAllowed, resolver, connect: guardedConnect() },
  );
  t.equal(answer.status, 200);
  t.equal(answer.body.toString(), 'hello');
  t.equal(answer.headers['x-seen'], `GET /a?b=1 127.0.0.1:${port} Bearer s3cret`);
  t.equal(answer.redirected, false);
});

t.test('redirects are checked like the first URL', async (t) => {
  handler = (req, res) => {
    const target = new URL(req.url!, 'http://x').searchParams.get('to');
    if (target) {
      res.statusCode = 302;
      res.setHeader('location', target);
      res.end();
      return;
    }
    res.end(`landed ${req.headers.authorization ?? 'without authorization'}`);
  };
  for (const [to, reason] of [
    ['http://10.0.0.7/', 'private'],
    ['http://169.254.169.254/', 'cloud_metadata'],
    ['http://private.test/', 'private'],
    ['http://[::ffff:192.168.0.1]/', 'private'],
    ['file:///etc/passwd', 'scheme'],
  ]) {
    const error = await refusal(t, { url: `${local}/?to=${encodeURIComponent(to!)}` }, loopbackAllowed);
    t.equal(error.reason, reason, to);
    t.match(error.message, /^A redirect was refused/);
  }
  const followed = await egressRequest(
    { orgId: ORG, url: `${local}/?to=${encodeURIComponent('/final')}`, headers: { authorization: 'Bearer k' } },
    { policy: loopbackAllowed, resolver, connect: guardedConnect() },
  );
  t.equal(followed.body.toString(), 'landed Bearer k', 'same origin keeps the headers');
  t.equal(followed.redirected, true);
  const crossOrigin = await egressRequest(
    {
      orgId: ORG,
      url: `${local}/?to=${encodeURIComponent(`http://local.test:${port}/final`)}`,
      headers: { authorization: 'Bearer k' },
    },
    { policy: loopbackAllowed, resolver, connect: guardedConnect() },
  );
  t.equal(crossOrigin.body.toString(), 'landed without authorization', 'another origin does not get credentials');
  const manual = await egressRequest(
    { orgId: ORG, url: `${local}/?to=/final`, redirect: 'manual' },
    { policy: loopbackAllowed, resolver, connect: guardedConnect() },
  );
  t.equal(manual.status, 302);
  handler = (req, res) => {
    res.statusCode = 302;
    res.setHeader('location', `/loop${req.url}`);
    res.end();
  };
  t.equal((await refusal(t, { url: `${local}/` }, loopbackAllowed)).reason, 'too_many_redirects');
});

t.test('bodies are bounded in bytes and calls in time', async (t) => {
  handler = (_req, res) => {
    res.write(Buffer.alloc(1000));
    res.end(Buffer.alloc(1000));
  };
  const big = await refusal(t, { url: local, maxResponseBytes: 1500 }, loopbackAllowed);
  t.equal(big.code, 'egress_response_too_large');
  handler = (_req, res) => {
    res.setHeader('content-length', '100000000');
    res.write('x');
  };
  t.equal(
    (await refusal(t, { url: local, maxResponseBytes: 1500 }, loopbackAllowed)).code,
    'egress_response_too_large',
  );
  handler = (_req, res) => {
    res.write('never finished');
  };
  const slow = await refusal(t, { url: local, timeoutMs: 50 }, loopbackAllowed);
  t.equal(slow.code, 'egress_timeout');
  server.closeAllConnections();
});

t.test('the gate holds each organization to its bound without holding up another', async (t) => {
  const gate = new EgressGate({ perOrg: 2, total: 10 });
  const held: ServerResponse[] = [];
  let arrived!: () => void;
  let arrivals = new Promise<void>((resolve) => (arrived = resolve));
  handler = (req, res) => {
    if (req.url === '/hold') {
      held.push(res);
      if (held.length === 2) arrived();
    } else res.end('quick');
  };
  const options = { policy: loopbackAllowed, resolver, connect: guardedConnect(), gate };
  const slow = [1, 2, 3].map(() => egressRequest({ orgId: ORG, url: `${local}/hold` }, options));
  await arrivals;
  t.same(gate.counts().byOrg[ORG], { inFlight: 2, waiting: 1 }, 'the third call waits');
  const other = await egressRequest({ orgId: OTHER, url: `${local}/quick` }, options);
  t.equal(other.body.toString(), 'quick', 'another organization is not held up');
  t.equal(held.length, 2, 'the server saw only two calls of the busy organization');
  arrivals = new Promise<void>((resolve) => (arrived = resolve));
  held.shift()!.end('done');
  await slow[0];
  await arrivals;
  for (const res of held) res.end('done');
  t.same(
    (await Promise.all(slow)).map((a) => a.body.toString()),
    ['done', 'done', 'done'],
  );
  t.same(gate.counts(), { inFlight: 0, waiting: 0, byOrg: {} });
});
