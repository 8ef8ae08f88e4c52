/**
 * Heavy requests' turns (docs/operations.md, "What one tenant can do to the others"): an admitted
 * large body does its work — the handler and its database writes — in turns, HEAVY_REQUESTS_AT_ONCE
 * (1) at once on the control plane, one per account, accounts taking turns; small requests never
 * wait. Requests are held in flight by row locks the test holds.
 */
import t from 'tap';
import { buildTestApp, call, signInAnonymous, type Caller } from './helpers/app.ts';
import { holdRevisions, lockWaits, untilLockWaits } from './helpers/lock-waits.ts';
import { createBlob, createOrg } from './helpers/resources.ts';

const { app, db } = await buildTestApp(t);

async function tenant(): Promise<{ caller: Caller; rev: string }> {
  const caller = await signInAnonymous(app);
  const org = await createOrg(app, caller);
  const { revision } = await createBlob(app, caller, org.id, { type: 'svc.dataset.nlp' });
  return { caller, rev: revision.id };
}

// 10 records of 30,000 characters: a body of ≈ 300 KB, heavy.
const BIG = { records: Array.from({ length: 10 }, (_, i) => ({ text: `${i}`.repeat(30_000) })) };

function upload(who: { caller: Caller; rev: string }, body: unknown) {
  return call(app, 'POST', `/v1/revisions/${who.rev}/upload_records`, { as: who.caller, body });
}

t.test("an admitted large body waits for another account's to finish its work", async (t) => {
  const alice = await tenant();
  const bob = await tenant();
  const carol = await tenant();
  const releaseAlice = await holdRevisions(t, db, [alice.rev]);
  const releaseBob = await holdRevisions(t, db, [bob.rev]);

  const finished: string[] = [];
  const aliceUpload = upload(alice, BIG).then((res) => (finished.push('alice'), res));
  await untilLockWaits(db, 1);
  const bobUpload = upload(bob, BIG).then((res) => (finished.push('bob'), res));
  // Small requests are served meanwhile, and give Bob's upload every chance to reach the database
  // if it were not waiting for its turn.
  for (let i = 0; i < 20; i++) {
    const small = await call(app, 'POST', `/v1/revisions/${carol.rev}/list_records`, { as: carol.caller, body: {} });
    t.equal(small.status, 200, 'a small request is served');
  }
  t.equal(await lockWaits(db), 1, "Bob's upload has not reached the database while Alice's holds the turn");
  await releaseBob();
  await releaseAlice();
  t.same([(await aliceUpload).status, (await bobUpload).status], [200, 200]);
  t.same(finished, ['alice', 'bob'], 'in turn');
});
