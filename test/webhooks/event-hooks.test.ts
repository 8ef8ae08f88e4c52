/**
 * Webhooks out (docs/webhooks.md, "Event hooks"): an execution's end makes a delivery to every
 * hook of its session subscribed to that end, in the statement that ends it; runners post it to
 * the hook's URL signed with the hook's secret (verifiable by the receiver), retry after a
 * failure with the same `webhook-id`, record every attempt (list_event_hook_attempts), survive a
 * restart, and give each organization a bounded share of their slots. Receivers are test servers
 * on 127.0.0.1, reached through the egress policy with loopback allowed by an explicit setting.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import t, { type Test } from 'tap';
import { createCredentialCipher } from '../../shared/crypto/credential-cipher.ts';
import { DeliveryLoop, type DeliveryLoopOptions } from '../../runner/hooks/delivery-loop.ts';
import { buildTestApp, call, signInAnonymous, type Caller } from '../helpers/app.ts';
import { command, createWorkflow, define, waitFor, type Workflow } from '../helpers/runner.ts';
import { createEgressPolicy } from '../../shared/egress/policy.ts';
import { egressTransport } from '../../shared/webhooks/egress-transport.ts';

// The egress policy refuses loopback by default; these receivers are allowed by this explicit setting.
const { app, db, config } = await buildTestApp(t, { EGRESS_ALLOW_ADDRESSES: '127.0.0.1/32' });
const alice = await signInAnonymous(app);

interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A receiver on 127.0.0.1: records every request, answers what `answer` says for its path. */
async function receiver(t: Test, answer: (path: string, nth: number) => number | 'hold') {
  const received: Received[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      received.push({ path, headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      const status = answer(path, received.filter((r) => r.path === path).length);
      if (status === 'hold') held.push(response);
      else response.writeHead(status).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    for (const response of held) response.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { received, held, base };
}

/** A runner's delivery loop, stopped at the end of the subtest `t`. */
function startLoop(t: Test, overrides: Partial<DeliveryLoopOptions> = {}): DeliveryLoop {
  const loop = new DeliveryLoop({
    db,
    cipher: createCredentialCipher(config.secrets.CREDENTIAL_KEY),
    transport: egressTransport({ policy: createEgressPolicy(config.egress) }),
    log: pino({ level: 'silent' }),
    inFlight: 8,
    perOrg: 4,
    attemptMs: 5_000,
    pollMs: 50,
    retryBaseMs: 50,
    ...overrides,
  });
  loop.start();
  t.teardown(() => loop.stop());
  return loop;
}

/** What a receiver does with the Standard Webhooks headers (docs/webhooks.md, "Verifying a delivery (Node)"). */
function verify(secret: string, message: Received): boolean {
  const id = String(message.headers['webhook-id']);
  const timestamp = String(message.headers['webhook-timestamp']);
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${message.body}`).digest();
  return String(message.headers['webhook-signature'])
    .split(' ')
    .some((part) => {
      const given = Buffer.from(part.replace(/^v1,/, ''), 'base64');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}

const SLEEP = { start: 'nap', nodes: { nap: { processor: 'logic.sleep', config: { seconds: 3600 } } } };

async function hook(caller: Caller, flow: Workflow, url: string, events: string[]) {
  return command(app, caller, flow.rev, 'create_event_hook', { session_id: flow.sessionId, url, events });
}

async function attempts(caller: Caller, flow: Workflow, hookId: string): Promise<any[]> {
  return (await command(app, caller, flow.rev, 'list_event_hook_attempts', { hook_id: hookId })).attempts;
}

const flow = await createWorkflow(app, alice);
const sleeper = await define(app, alice, flow, SLEEP);

t.test('an end is delivered, signed, once per subscribed hook; a 500 is retried with the same id', async (t) => {
  const server = await receiver(t, (path, nth) => (path === '/flaky' && nth === 1 ? 500 : 204));
  const steady = await hook(alice, flow, `${server.base}/steady`, ['execution.cancelled']);
  const flaky = await hook(alice, flow, `${server.base}/flaky`, ['execution.cancelled', 'execution.failed']);
  const other = await hook(alice, flow, `${server.base}/successes`, ['execution.succeeded']);
  t.match(steady.secret, /^whsec_/);
  startLoop(t);

  const execution = (
    await command(app, alice, flow.rev, 'create_execution', {
      session_id: flow.sessionId,
      definition_id: sleeper,
      input_data: { n: 7 },
    })
  ).execution;
  // Any path that ends an execution makes its deliveries; cancelling is the quickest.
  await command(app, alice, flow.rev, 'cancel_execution', { execution_id: execution.id });
  await waitFor(
    async () => server.received.length,
    (n) => n >= 3,
    'the steady delivery and both attempts of the flaky one',
  );

  const [toSteady] = server.received.filter((r) => r.path === '/steady');
  t.ok(verify(steady.secret, toSteady!), 'the receiver verifies the signature with the secret it was given');
  t.notOk(verify(flaky.secret, toSteady!), "another hook's secret does not verify it");
  const payload = JSON.parse(toSteady!.body);
  t.match(payload, {
    type: 'execution.cancelled',
    data: {
      execution: {
        id: execution.id,
        revision_id: flow.rev,
        session_id: flow.sessionId,
        status: 'cancelled',
        output_omitted: false,
      },
    },
  });
  const flakyTries = server.received.filter((r) => r.path === '/flaky');
  t.equal(flakyTries.length, 2);
  t.equal(flakyTries[0]!.headers['webhook-id'], flakyTries[1]!.headers['webhook-id'], 'one idempotency id per message');
  t.not(flakyTries[0]!.headers['webhook-id'], toSteady!.headers['webhook-id']);
  t.ok(flakyTries.every((r) => verify(flaky.secret, r)));
  t.equal(server.received.filter((r) => r.path === '/successes').length, 0, 'an end not subscribed to is not sent');

  const listed = await waitFor(
    () => attempts(alice, flow, flaky.event_hook.id),
    (list) => list.length === 2,
    'both attempts recorded',
  );
  t.match(listed, [
    {
      attempt: 2,
      outcome: 'delivered',
      status_code: 204,
      error: null,
      execution_id: execution.id,
      event: 'execution.cancelled',
    },
    { attempt: 1, outcome: 'retrying', status_code: 500, execution_id: execution.id },
  ]);
  t.equal(listed[0].delivery_id, flakyTries[0]!.headers['webhook-id']);
  // Deliveries are appended all day: their ids are time-ordered UUIDv7s (migration 035).
  t.match(listed[0].delivery_id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.same(await attempts(alice, flow, other.event_hook.id), []);

  const shown = JSON.stringify([
    await command(app, alice, flow.rev, 'get_event_hook', { hook_id: flaky.event_hook.id }),
    await command(app, alice, flow.rev, 'list_event_hooks', { session_id: flow.sessionId }),
  ]);
  t.notOk(shown.includes(flaky.secret.slice(6)), 'the secret is never shown again');
  for (const h of [steady, flaky, other])
    await command(app, alice, flow.rev, 'delete_event_hook', { hook_id: h.event_hook.id });
});

t.test('a delivery made while no runner delivers is posted once one starts (durable)', async (t) => {
  const server = await receiver(t, () => 200);
  const h = await hook(alice, flow, `${server.base}/later`, ['execution.cancelled']);
  const execution = (
    await command(app, alice, flow.rev, 'create_execution', {
      session_id: flow.sessionId,
      definition_id: sleeper,
    })
  ).execution;
  await command(app, alice, flow.rev, 'cancel_execution', { execution_id: execution.id });
  const { rows } = await db.query('SELECT status FROM hook_deliveries WHERE hook_id = $1', [h.event_hook.id]);
  t.same(rows, [{ status: 'pending' }], 'the end made the delivery, in its own statement');
  startLoop(t);
  await waitFor(
    async () => server.received.length,
    (n) => n === 1,
    'the delivery',
  );
  t.equal(JSON.parse(server.received[0]!.body).type, 'execution.cancelled');
  await command(app, alice, flow.rev, 'delete_event_hook', { hook_id: h.event_hook.id });
});

t.test("one organization's deliveries hold at most its share of a runner's slots", async (t) => {
  const server = await receiver(t, (path) => (path === '/slow' ? 'hold' : 200));
  const bob = await signInAnonymous(app);
  const busyFlow = await createWorkflow(app, bob);
  const busySleeper = await define(app, bob, busyFlow, SLEEP);
  await hook(bob, busyFlow, `${server.base}/slow`, ['execution.cancelled']);
  for (let i = 0; i < 6; i++) {
    const e = (
      await command(app, bob, busyFlow.rev, 'create_execution', {
        session_id: busyFlow.sessionId,
        definition_id: busySleeper,
      })
    ).execution;
    await command(app, bob, busyFlow.rev, 'cancel_execution', { execution_id: e.id });
  }
  const quiet = await hook(alice, flow, `${server.base}/quiet`, ['execution.cancelled']);
  const e = (
    await command(app, alice, flow.rev, 'create_execution', {
      session_id: flow.sessionId,
      definition_id: sleeper,
    })
  ).execution;
  await command(app, alice, flow.rev, 'cancel_execution', { execution_id: e.id });

  // Attempts long enough that none of the held ones times out and is tried again meanwhile.
  const loop = startLoop(t, { inFlight: 3, perOrg: 2, attemptMs: 120_000 });
  const delivered = await waitFor(
    () => attempts(alice, flow, quiet.event_hook.id),
    (list) => list.length === 1,
    "the quiet organization's delivery, recorded",
  );
  t.match(delivered, [{ outcome: 'delivered', status_code: 200 }]);
  await waitFor(
    async () => server.held.length,
    (n) => n === 2,
    'the busy organization at its share',
  );
  t.equal(loop.inFlight(), 2, 'the busy organization holds two slots; the third stays free for others');
  t.equal(server.received.filter((r) => r.path === '/slow').length, 2);
  for (const response of server.held.splice(0)) response.writeHead(200).end();
});

t.test('deliveries are subject to the egress policy: loopback is refused unless allowed', async (t) => {
  const server = await receiver(t, () => 200);
  const h = await hook(alice, flow, `${server.base}/refused`, ['execution.cancelled']);
  // The default policy, as in production: no loopback.
  startLoop(t, { transport: egressTransport({ policy: createEgressPolicy() }) });
  const e = (
    await command(app, alice, flow.rev, 'create_execution', { session_id: flow.sessionId, definition_id: sleeper })
  ).execution;
  await command(app, alice, flow.rev, 'cancel_execution', { execution_id: e.id });
  const list = await waitFor(
    () => attempts(alice, flow, h.event_hook.id),
    (found) => found.length >= 1,
    'a refused attempt',
  );
  // Newest first; more than one when a retry came before the listing.
  t.match(list.at(-1), { attempt: 1 });
  for (const attempt of list) t.match(attempt, { outcome: 'retrying', status_code: null, error: /^egress_refused: / });
  t.equal(server.received.length, 0, 'nothing reached the receiver');
  await command(app, alice, flow.rev, 'delete_event_hook', { hook_id: h.event_hook.id });
});

t.test('create_event_hook is checked like a creation', async (t) => {
  const bad = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_event_hook`, {
    as: alice,
    body: { session_id: flow.sessionId, url: 'ftp://127.0.0.1/x', events: ['execution.succeeded'] },
  });
  t.equal(bad.status, 400);
  t.equal(bad.body.error, 'invalid_request_body');
  const withCredentials = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_event_hook`, {
    as: alice,
    body: { session_id: flow.sessionId, url: 'https://user:pw@example.test/x', events: ['execution.failed'] },
  });
  t.equal(withCredentials.status, 400);
  const carol = await signInAnonymous(app);
  const stranger = await call(app, 'POST', `/v1/revisions/${flow.rev}/create_event_hook`, {
    as: carol,
    body: { session_id: flow.sessionId, url: 'https://example.test/x', events: ['execution.failed'] },
  });
  t.equal(stranger.status, 404, 'a revision the caller cannot read does not exist for them');
});
