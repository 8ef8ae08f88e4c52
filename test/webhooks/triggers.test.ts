/**
 * Webhooks in (docs/webhooks.md, "Triggers"): create_trigger gives a path and a secret shown
 * once; a request signed with it starts an execution of the trigger's definition in its session
 * with the body as input_data (202 + id); a bad signature is 401, a message outside the replay
 * window 401, the same message again the same execution, an unknown trigger 404, a body past
 * `workflow.execution_input_bytes` 400 with the limit object; rotation retires the old secret;
 * requests to one trigger and one organization are throttled; the account a trigger acts as must
 * still be able to write.
 */
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { signedHeaders } from '../../shared/webhooks/signature.ts';
import { buildTestApp, call, setOverride, signInAnonymous, type Caller } from '../helpers/app.ts';
import { grant } from '../helpers/access.ts';
import { assertRefusal, commandTransports, TRANSPORTS } from '../helpers/command-transports.ts';
import { command, createWorkflow, define, getExecution, type Workflow } from '../helpers/runner.ts';

const PER_TRIGGER = 6;
const PER_ORG = 30;
const MISSES = 10;
const { app } = await buildTestApp(t, {
  HOOK_MISSES_PER_ADDRESS_PER_MINUTE: String(MISSES),
  HOOK_CALLS_PER_TRIGGER_PER_MINUTE: String(PER_TRIGGER),
  HOOK_CALLS_PER_ORG_PER_MINUTE: String(PER_ORG),
});
const alice = await signInAnonymous(app);
const bob = await signInAnonymous(app);

const ECHO = { start: 'one', nodes: { one: { processor: 'logic.code', config: { code: 'export default (i) => i' } } } };

async function workflowWithDefinition(owner: Caller): Promise<{ flow: Workflow; definitionId: string }> {
  const flow = await createWorkflow(app, owner);
  return { flow, definitionId: await define(app, owner, flow, ECHO) };
}

const main = await workflowWithDefinition(alice);

async function createTrigger(caller: Caller, setup = main): Promise<{ trigger: any; secret: string }> {
  return command(app, caller, setup.flow.rev, 'create_trigger', {
    session_id: setup.flow.sessionId,
    definition_id: setup.definitionId,
  });
}

/** Posts `body` to the trigger, signed with `secret` (at `now`, as message `id`). */
function post(path: string, secret: string, body: string, options: { now?: Date; id?: string } = {}) {
  return app.inject({
    method: 'POST',
    url: path,
    headers: {
      'content-type': 'application/json',
      ...signedHeaders(secret, options.id ?? `msg_${randomUUID()}`, body, options.now),
    },
    payload: body,
  });
}

t.test('a signed request starts an execution with the body as input_data', async (t) => {
  const { trigger, secret } = await createTrigger(alice);
  t.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
  t.equal(trigger.path, `/v1/hooks/${trigger.id}`);
  t.equal(trigger.acting_as, alice.user.id);
  const body = JSON.stringify({ order: 42, items: ['a', 'b'] });
  const res = await post(trigger.path, secret, body);
  t.equal(res.statusCode, 202, res.body);
  const answer = res.json();
  t.equal(answer.status, 'success');
  const execution = await getExecution(app, alice, main.flow, answer.execution_id);
  t.same(execution.input_data, { order: 42, items: ['a', 'b'] });
  t.equal(execution.session_id, main.flow.sessionId);
  t.equal(execution.definition_id, main.definitionId);

  // Senders that name another content type, or none, are read the same way: the bytes are what is signed.
  for (const contentType of ['text/plain', undefined]) {
    const plain = '{"plain":true}';
    const res2 = await app.inject({
      method: 'POST',
      url: trigger.path,
      headers: {
        ...(contentType ? { 'content-type': contentType } : {}),
        ...signedHeaders(secret, `msg_${randomUUID()}`, plain),
      },
      payload: plain,
    });
    t.equal(res2.statusCode, 202, `${contentType}: ${res2.body}`);
  }

  // Get and list never show the secret.
  const got = await command(app, alice, main.flow.rev, 'get_trigger', { trigger_id: trigger.id });
  const listed = await command(app, alice, main.flow.rev, 'list_triggers', { session_id: main.flow.sessionId });
  t.same(got.trigger, trigger);
  t.ok(listed.triggers.some((x: any) => x.id === trigger.id));
  t.notOk(JSON.stringify([got, listed]).includes(secret.slice(6)), 'the secret is never shown again');
});

t.test('the same message again answers the same execution; a replay past the window is 401', async (t) => {
  const { trigger, secret } = await createTrigger(alice);
  const body = '{"n":1}';
  const first = await post(trigger.path, secret, body, { id: 'msg_same' });
  const again = await post(trigger.path, secret, body, { id: 'msg_same' });
  t.equal(first.statusCode, 202);
  t.equal(again.statusCode, 202);
  t.equal(again.json().execution_id, first.json().execution_id);
  t.equal(again.headers['idempotent-replayed'], 'true');
  const executions = await command(app, alice, main.flow.rev, 'list_executions', { session_id: main.flow.sessionId });
  t.equal(executions.executions.filter((e: any) => e.id === first.json().execution_id).length, 1);

  // Signed correctly, but six minutes old (a captured request sent again later) or from the future.
  const old = await post(trigger.path, secret, body, { now: new Date(Date.now() - 6 * 60_000) });
  t.equal(old.statusCode, 401);
  t.equal(old.json().error, 'unauthorized');
  const future = await post(trigger.path, secret, body, { now: new Date(Date.now() + 6 * 60_000) });
  t.equal(future.statusCode, 401);
});

t.test("a bad signature, a missing one, or another trigger's secret is 401", async (t) => {
  const { trigger, secret } = await createTrigger(alice);
  const other = await createTrigger(alice);
  const body = '{"n":2}';
  const headers = signedHeaders(secret, 'msg_x', body);
  const tampered = await app.inject({
    method: 'POST',
    url: trigger.path,
    headers: { 'content-type': 'application/json', ...headers },
    payload: '{"n":3}',
  });
  t.equal(tampered.statusCode, 401);
  t.equal(tampered.json().error, 'unauthorized');
  const unsigned = await app.inject({
    method: 'POST',
    url: trigger.path,
    headers: { 'content-type': 'application/json' },
    payload: body,
  });
  t.equal(unsigned.statusCode, 401);
  const wrongSecret = await post(trigger.path, other.secret, body);
  t.equal(wrongSecret.statusCode, 401);
});

t.test('an unknown trigger is 404', async (t) => {
  const { secret } = await createTrigger(alice);
  const res = await post(`/v1/hooks/${randomUUID()}`, secret, '{}');
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'not_found');
  t.equal((await post('/v1/hooks/not-a-trigger', secret, '{}')).statusCode, 404);
});

t.test('a body past workflow.execution_input_bytes is refused with the limit object', async (t) => {
  const { trigger, secret } = await createTrigger(alice);
  const body = JSON.stringify({ pad: 'x'.repeat(65_536) });
  const res = await post(trigger.path, secret, body);
  t.equal(res.statusCode, 400);
  t.same(res.json(), {
    status: 'failure',
    error: 'limit_exceeded',
    message: res.json().message,
    limit: { id: 'workflow.execution_input_bytes', value: 65_536 },
  });
  const notJson = await post(trigger.path, secret, 'not json');
  t.equal(notJson.statusCode, 400);
  t.equal(notJson.json().error, 'invalid_request_body');
});

t.test('rotating the secret retires the old one; deleting the trigger ends its path', async (t) => {
  const { trigger, secret } = await createTrigger(alice);
  const rotated = await command(app, alice, main.flow.rev, 'rotate_trigger_secret', { trigger_id: trigger.id });
  t.not(rotated.secret, secret);
  t.equal((await post(trigger.path, secret, '{}')).statusCode, 401);
  t.equal((await post(trigger.path, rotated.secret, '{}')).statusCode, 202);
  await command(app, alice, main.flow.rev, 'delete_trigger', { trigger_id: trigger.id });
  t.equal((await post(trigger.path, rotated.secret, '{}')).statusCode, 404);
});

t.test('who may create a trigger is who may create an execution; its requests act as that account', async (t) => {
  const setup = await workflowWithDefinition(alice);
  await grant(app, alice, 'blob', setup.flow.blobId, bob.user.id, 'read');
  const refused = await call(app, 'POST', `/v1/revisions/${setup.flow.rev}/create_trigger`, {
    as: bob,
    body: { session_id: setup.flow.sessionId, definition_id: setup.definitionId },
  });
  t.equal(refused.status, 403);
  t.equal(refused.body.error, 'forbidden');
  await grant(app, alice, 'blob', setup.flow.blobId, bob.user.id, 'write');
  const { trigger, secret } = await createTrigger(bob, setup);
  t.equal((await post(trigger.path, secret, '{}')).statusCode, 202);
  // Bob can no longer write: the trigger he set stops, until a writer rotates its secret.
  await grant(app, alice, 'blob', setup.flow.blobId, bob.user.id, 'read');
  const stopped = await post(trigger.path, secret, '{}');
  t.equal(stopped.statusCode, 403);
  t.equal(stopped.json().error, 'forbidden');
  const rotated = await command(app, alice, setup.flow.rev, 'rotate_trigger_secret', { trigger_id: trigger.id });
  t.equal(rotated.trigger.acting_as, alice.user.id);
  t.equal((await post(trigger.path, rotated.secret, '{}')).statusCode, 202);
});

t.test('the trigger commands answer alike over REST and JSON-RPC', async (t) => {
  const transports = await commandTransports(t, app);
  for (const via of TRANSPORTS) {
    const created = await transports.run(via, alice, main.flow.rev, 'create_trigger', {
      session_id: main.flow.sessionId,
      definition_id: main.definitionId,
    });
    t.equal(created.status, 200, via);
    t.match(created.body.secret, /^whsec_/);
    const id = created.body.trigger.id;
    const rotated = await transports.run(via, alice, main.flow.rev, 'rotate_trigger_secret', { trigger_id: id });
    t.not(rotated.body.secret, created.body.secret);
    const deleted = await transports.run(via, alice, main.flow.rev, 'delete_trigger', { trigger_id: id });
    t.equal(deleted.body.trigger.id, id);
    assertRefusal(
      t,
      await transports.run(via, alice, main.flow.rev, 'get_trigger', { trigger_id: id }),
      404,
      'not_found',
      via,
    );
    assertRefusal(
      t,
      await transports.run(via, bob, main.flow.rev, 'list_triggers', { session_id: main.flow.sessionId }),
      404,
      'not_found',
      via,
    );
  }
});

t.test("a flood on one trigger is throttled; another organization's trigger is not", async (t) => {
  // Organizations of their own: the earlier subtests spent alice's organization's allowance.
  const erin = await signInAnonymous(app);
  const flooded = await createTrigger(erin, await workflowWithDefinition(erin));
  const carol = await signInAnonymous(app);
  const quiet = await createTrigger(carol, await workflowWithDefinition(carol));
  const statuses: number[] = [];
  for (let i = 0; i < PER_TRIGGER + 3; i++)
    statuses.push((await post(flooded.trigger.path, flooded.secret, '{}')).statusCode);
  t.same(statuses.slice(0, PER_TRIGGER), Array(PER_TRIGGER).fill(202));
  t.same(statuses.slice(PER_TRIGGER), [429, 429, 429]);
  const refused = await post(flooded.trigger.path, flooded.secret, '{}');
  t.ok(Number(refused.headers['retry-after']) >= 1);
  t.equal(refused.json().error, 'rate_limited');
  t.equal((await post(quiet.trigger.path, quiet.secret, '{}')).statusCode, 202);
});

t.test("an organization's triggers together are throttled", async (t) => {
  const dave = await signInAnonymous(app);
  const setup = await workflowWithDefinition(dave);
  await setOverride(app, 'workflow.running_executions_per_org', 'org', setup.flow.orgId, 100);
  // Seven triggers: none reaches its own allowance before the organization's is spent.
  const triggers = [];
  for (let i = 0; i < 7; i++) triggers.push(await createTrigger(dave, setup));
  const statuses: number[] = [];
  for (let i = 0; i < PER_ORG + 1; i++) {
    const { trigger, secret } = triggers[i % triggers.length]!;
    statuses.push((await post(trigger.path, secret, '{}')).statusCode);
  }
  t.same(statuses.slice(0, PER_ORG), Array(PER_ORG).fill(202));
  t.equal(statuses[PER_ORG], 429);
});

// Last: it spends this address's allowance of unknown triggers for the rest of the minute.
t.test('an address naming unknown triggers is refused before the database; known triggers still answer', async (t) => {
  const known = await createTrigger(alice);
  t.equal((await post(known.trigger.path, known.secret, '{}')).statusCode, 202);
  const fresh = await createTrigger(alice);
  const statuses: number[] = [];
  for (let i = 0; i <= MISSES && !statuses.includes(429); i++)
    statuses.push((await post(`/v1/hooks/${randomUUID()}`, known.secret, '{}')).statusCode);
  t.equal(statuses.at(-1), 429, `refused after its misses: ${statuses.join(' ')}`);
  t.ok(statuses.slice(0, -1).every((status) => status === 404));
  t.equal((await post(known.trigger.path, known.secret, '{}')).statusCode, 202, 'a trigger seen before answers');
  const unseen = await post(fresh.trigger.path, fresh.secret, '{}');
  t.equal(unseen.statusCode, 429, 'one not seen yet waits for the window, like an unknown one');
  t.ok(Number(unseen.headers['retry-after']) >= 1);
});
