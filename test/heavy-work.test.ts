/**
 * Heavy requests (docs/operations.md, "What one tenant can do to the others"): a large body takes
 * a slot of its account and of its address before it is read; past either, 429 `rate_limited`
 * with `Retry-After` at once, over REST and over the WebSocket. Small requests are never counted.
 * Requests are held in flight by a row lock the test holds, so nothing depends on timing.
 */
import t from 'tap';
import { buildTestApp, call, signInAnonymous, type Caller } from './helpers/app.ts';
import { holdRevisions, untilLockWaits } from './helpers/lock-waits.ts';
import { createBlob, createOrg } from './helpers/resources.ts';
import { connect, wsUrl } from './helpers/ws-client.ts';

// The defaults: 256 KiB makes a body heavy; 2 in flight per account, 4 per address.
// Turns off (HEAVY_REQUESTS_AT_ONCE 0): the admitted requests here must reach the database at once
// to be held there; test/heavy-turns.test.ts checks the turns.
const { app, db } = await buildTestApp(t, { HEAVY_REQUESTS_AT_ONCE: '0' });

/** A signed-in caller with an NLP revision of its own. */
async function tenant(): Promise<{ caller: Caller; rev: string }> {
  const caller = await signInAnonymous(app);
  const org = await createOrg(app, caller);
  const { revision } = await createBlob(app, caller, org.id, { type: 'svc.dataset.nlp' });
  return { caller, rev: revision.id };
}

// 10 records of 30,000 characters: a body of ≈ 300 KB, heavy.
const BIG = { records: Array.from({ length: 10 }, (_, i) => ({ text: `${i}`.repeat(30_000) })) };
const SMALL = { records: [{ text: 'small' }] };

function upload(who: { caller: Caller; rev: string }, body: unknown, remoteAddress = '127.0.0.1') {
  return app
    .inject({
      method: 'POST',
      url: `/v1/revisions/${who.rev}/upload_records`,
      headers: who.caller.headers,
      payload: body as object,
      remoteAddress,
    })
    .then((res) => ({ status: res.statusCode, body: res.json(), headers: res.headers }));
}

/** The answer of `request` if it comes before `n` statements wait on a lock (it was admitted and waits too), else undefined. */
async function answeredBefore<T>(request: Promise<T>, n: number): Promise<T | undefined> {
  return Promise.race([request, untilLockWaits(db, n).then(() => undefined)]);
}

t.test('large bodies: two in flight per account, four per address; then 429 at once', async (t) => {
  const alice = await tenant();
  const bob = await tenant();
  const carol = await tenant();
  const release = await holdRevisions(t, db, [alice.rev, bob.rev]);

  const aliceHeld = [upload(alice, BIG), upload(alice, BIG)];
  await untilLockWaits(db, 2);
  const third = await answeredBefore(upload(alice, BIG), 3);
  t.ok(third, 'the third large body of the account is answered without waiting');
  t.equal(third?.status, 429);
  t.equal(third?.body.error, 'rate_limited');
  t.match(third?.body.message, /account/);
  t.equal(third?.headers['retry-after'], '1');

  const small = await call(app, 'POST', `/v1/revisions/${alice.rev}/list_records`, { as: alice.caller, body: {} });
  t.equal(small.status, 200, 'a small request of the same account is not counted');

  const bobHeld = [upload(bob, BIG), upload(bob, BIG)];
  await untilLockWaits(db, 4);
  const fromAddress = await answeredBefore(upload(carol, BIG), 5);
  t.equal(fromAddress?.status, 429, 'a fifth large body from the address is refused');
  t.match(fromAddress?.body.message, /address/);
  const elsewhere = await upload(carol, BIG, '10.0.0.7');
  t.equal(elsewhere.status, 200, 'the same account from another address is served');
  t.equal((await upload(carol, SMALL)).status, 200, 'a small body from the full address is served');

  await release();
  const held = await Promise.all([...aliceHeld, ...bobHeld]);
  t.same(
    held.map((a) => a.status),
    [200, 200, 200, 200],
  );
  t.equal((await upload(alice, BIG)).status, 200, 'the slots are given back');
});

t.test('WebSocket: a large message past the account is answered rate_limited (id null) and dropped', async (t) => {
  const alice = await tenant();
  const release = await holdRevisions(t, db, [alice.rev]);
  const held = [upload(alice, BIG), upload(alice, BIG)];
  await untilLockWaits(db, 2);
  const client = await connect(t, await wsUrl(app), { headers: alice.caller.headers });
  const frame = await answeredBefore(
    client.call({
      jsonrpc: '2.0',
      id: 1,
      method: 'upload_records',
      params: { revision_id: alice.rev, ...BIG },
    }),
    3,
  );
  t.ok(frame, 'answered without waiting');
  t.same(frame?.id, null);
  t.equal(frame?.error.code, -32001);
  t.equal(frame?.error.data.error, 'rate_limited');
  t.equal(frame?.error.data.http_status, 429);
  t.equal(frame?.error.data.retry_after, 1);
  const small = await client.call({
    jsonrpc: '2.0',
    id: 2,
    method: 'list_records',
    params: { revision_id: alice.rev },
  });
  t.same(small.error, undefined, 'a small message is served');
  await release();
  t.same(
    (await Promise.all(held)).map((a) => a.status),
    [200, 200],
  );
});
