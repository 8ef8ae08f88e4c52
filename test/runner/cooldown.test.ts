/**
 * Cool-downs (shared/sandbox/cooldowns.ts, docs/sandbox.md "Hostile code"): strikes against an
 * organization double its cool-down; while it lasts, the organization's `logic.code` runs fail at
 * once with `code_cooldown` on every runner, other organizations run as usual; the ops API lists
 * the cool-downs and each runner's sandbox, and an operator can end a cool-down.
 */
import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { registerRunner } from '../../shared/runner-registry.ts';
import { COOLDOWN_BASE_SECONDS, recordStrike } from '../../shared/sandbox/cooldowns.ts';
import { buildTestApp, signInAnonymous } from '../helpers/app.ts';
import { opsData, startOpsApp } from '../helpers/ops.ts';
import { createWorkflow, define, startExecution, startEngine, waitFor, waitForEnd } from '../helpers/runner.ts';

const { app, databaseUrl, db, config } = await buildTestApp(t);
const mallory = await signInAnonymous(app);
const bob = await signInAnonymous(app);

const ONE = { start: 'one', nodes: { one: { processor: 'logic.code', config: { code: 'export default () => 1' } } } };

const graphql = (ops: FastifyInstance, query: string) => opsData(ops, config, query);

t.test('strikes double the cool-down, a burst counts once, a day later the count starts again', async (t) => {
  const flow = await createWorkflow(app, mallory);
  const first = await recordStrike(db, flow.orgId, 'lost an isolate');
  t.equal(first?.strikes, 1);
  const seconds = (first!.until.getTime() - first!.lastStrikeAt.getTime()) / 1000;
  t.ok(Math.abs(seconds - COOLDOWN_BASE_SECONDS) < 2, `the first cool-down is ${COOLDOWN_BASE_SECONDS} s`);
  t.equal(
    (await recordStrike(db, flow.orgId, 'again at once'))?.strikes,
    1,
    'a strike in the same burst does not count again',
  );
  await db.query(`UPDATE sandbox_cooldowns SET last_strike_at = now() - interval '1 minute' WHERE org_id = $1`, [
    flow.orgId,
  ]);
  const second = await recordStrike(db, flow.orgId, 'a minute later');
  t.equal(second?.strikes, 2);
  t.ok(
    second!.until.getTime() - second!.lastStrikeAt.getTime() >= 2 * COOLDOWN_BASE_SECONDS * 1000 - 2000,
    'twice as long',
  );
  await db.query(`UPDATE sandbox_cooldowns SET last_strike_at = now() - interval '25 hours' WHERE org_id = $1`, [
    flow.orgId,
  ]);
  t.equal((await recordStrike(db, flow.orgId, 'a day later'))?.strikes, 1, 'forgiven after a day');
  t.equal(await recordStrike(db, '00000000-0000-4000-8000-000000000000', 'no such org'), null);
  t.equal(await recordStrike(db, 'not-an-org', 'no tenant'), null);
  await db.query('DELETE FROM sandbox_cooldowns');
});

t.test("a cooled-down organization's code fails at once, others run; ops lists it and can end it", async (t) => {
  const { ops } = await startOpsApp(t, { config, db, databaseUrl });
  const runner = await startEngine(t, databaseUrl);
  const registration = await registerRunner(
    db,
    { host: 'test-host', pid: process.pid, version: 'test' },
    () => {},
    () => runner.engine.sandbox(),
  );
  t.teardown(() => registration.stop());

  const hostile = await createWorkflow(app, mallory);
  const hostileOne = await define(app, mallory, hostile, ONE);
  const flow = await createWorkflow(app, bob);
  await recordStrike(db, hostile.orgId, 'isolated-vm reported a catastrophic error: out of memory');
  // The cool-down would end 30 s after the strike, however long the runner takes to start its
  // engine thread and hear of it (longer than that on a loaded machine): it lasts the test's time.
  await db.query(`UPDATE sandbox_cooldowns SET until = now() + interval '1 hour' WHERE org_id = $1`, [hostile.orgId]);

  // The runner reads cool-downs every 5 s: wait until mallory's code is refused.
  const refused = await waitFor(
    async () => waitForEnd(app, mallory, hostile, (await startExecution(app, mallory, hostile, hostileOne)).id),
    (ended) => ended.error?.code === 'code_cooldown',
    'the cool-down to reach the runner',
  );
  t.equal(refused.status, 'failed');
  t.match(refused.error.message, /cooled down until .*memory bomb/);
  const fine = await waitForEnd(
    app,
    bob,
    flow,
    (await startExecution(app, bob, flow, await define(app, bob, flow, ONE))).id,
  );
  t.equal(fine.status, 'succeeded', "another organization's code runs");

  const listed = await graphql(ops, '{ sandboxCooldowns { orgId strikes reason active } }');
  t.same(listed.sandboxCooldowns, [
    {
      orgId: hostile.orgId,
      strikes: 1,
      reason: 'isolated-vm reported a catastrophic error: out of memory',
      active: true,
    },
  ]);
  const reportsBobsContext = (r: any) => r.host === 'test-host' && r.sandbox !== null && r.sandbox.contextsMade > 0;
  const sandbox = await waitFor(
    async () =>
      (
        await graphql(
          ops,
          '{ runners { host sandbox { isolatesLive isolatesBusy isolatesIdle runsWaiting contexts contextsMade contextsReused isolatesRecycled organizations { orgId waiting busy } } } }',
        )
      ).runners,
    // A heartbeat can carry a snapshot taken before bob's run (isolates up, no context made yet):
    // wait for one that shows the context his run took.
    (runners: any[]) => runners.some(reportsBobsContext),
    "the runner's heartbeat to report the context bob's run took",
  );
  // The same runner the wait saw: the first subtest's runner may still be listed under this host.
  const reported = sandbox.find(reportsBobsContext).sandbox;
  t.ok(reported.isolatesLive > 0, 'isolates are live');
  t.ok(reported.isolatesIdle + reported.isolatesBusy === reported.isolatesLive, 'isolates busy + idle = live');
  t.ok(reported.contexts >= 1, "bob's context is kept for the next run");
  // Bob's run made the context of the isolate it ran on, or took the warm one (shared contexts).
  t.ok(reported.contextsMade >= reported.contexts, 'contexts made are counted');
  t.equal(typeof reported.contextsReused, 'number');
  t.equal(reported.isolatesRecycled, 0, 'no isolate was retired');

  t.same(await graphql(ops, `mutation { clearSandboxCooldown(orgId: "${hostile.orgId}") }`), {
    clearSandboxCooldown: true,
  });
  t.same((await graphql(ops, '{ sandboxCooldowns(all: true) { orgId } }')).sandboxCooldowns, []);
  const again = await waitFor(
    async () => waitForEnd(app, mallory, hostile, (await startExecution(app, mallory, hostile, hostileOne)).id),
    (ended) => ended.status === 'succeeded',
    'the runner to hear the cool-down ended',
  );
  t.equal(again.output, 1);
});
