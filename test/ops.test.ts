import type { FastifyInstance } from 'fastify';
import t from 'tap';
import { QUEUES } from '../shared/queue/queues.ts';
import { registerRunner } from '../shared/runner-registry.ts';
import { buildTestApp } from './helpers/app.ts';
import { opsRequest, startOpsApp } from './helpers/ops.ts';

const { db, config, databaseUrl } = await buildTestApp(t);
const token = config.secrets.OPS_TOKEN;

const graphql = (ops: FastifyInstance, query: string, authorization: string | null = `Bearer ${token}`) =>
  opsRequest(ops, query, authorization);

// A subtest of its own, so pg-boss is stopped before the database is dropped at the file's end.
t.test('operations API', async (t) => {
  const { ops, boss } = await startOpsApp(t, { config, db, databaseUrl });

  t.test('refuses a request without the ops token', async (t) => {
    const { status, body, headers } = await graphql(ops, '{ health { status } }', null);
    t.equal(status, 401);
    t.same(body, {
      errors: [{ message: 'Send Authorization: Bearer <OPS_TOKEN>.', extensions: { code: 'unauthorized' } }],
    });
    t.equal(headers['www-authenticate'], 'Bearer');
  });

  t.test('refuses a wrong token, a prefix of it, and another scheme', async (t) => {
    for (const authorization of [
      'Bearer wrong',
      `Bearer ${token.slice(0, -1)}`,
      `Bearer ${token}x`,
      `Basic ${token}`,
      token,
      'Bearer ',
    ]) {
      const { status, body } = await graphql(ops, '{ health { status } }', authorization);
      t.equal(status, 401, authorization);
      t.equal(body.errors[0].extensions.code, 'unauthorized');
    }
  });

  t.test('refuses unknown paths without the token rather than answering 404', async (t) => {
    const res = await ops.inject({ method: 'GET', url: '/nope' });
    t.equal(res.statusCode, 401);
  });

  t.test('answers health with the token (scheme case-insensitive)', async (t) => {
    const { status, body } = await graphql(ops, '{ health { status version pid database } }', `bearer ${token}`);
    t.equal(status, 200);
    t.same(body.data.health, { status: 'ok', version: '0.1.0', pid: process.pid, database: true });
  });

  t.test('lists runners with liveness from their heartbeat', async (t) => {
    const noError = (error: unknown) => t.fail(String(error));
    const running = await registerRunner(db, { host: 'host-a', pid: 101, version: '0.1.0' }, noError);
    const stopped = await registerRunner(db, { host: 'host-b', pid: 102, version: '0.1.0' }, noError);
    const silent = await registerRunner(db, { host: 'host-c', pid: 103, version: '0.0.9' }, noError);
    await stopped.stop();
    await silent.stop();
    // A runner that died: no stopped_at, heartbeat a minute old.
    await db.query(
      `UPDATE runners SET stopped_at = NULL, heartbeat_at = now() - interval '1 minute' WHERE id = $1::uuid`,
      [silent.id],
    );
    t.teardown(() => running.stop());

    const { status, body } = await graphql(
      ops,
      '{ runners { id host pid version startedAt heartbeatAt stoppedAt alive } }',
    );
    t.equal(status, 200);
    const byId = new Map(body.data.runners.map((r: { id: string }) => [r.id, r]));
    t.equal(byId.size, 3);
    t.match(byId.get(running.id), {
      host: 'host-a',
      pid: 101,
      version: '0.1.0',
      startedAt: String,
      heartbeatAt: String,
      stoppedAt: null,
      alive: true,
    });
    t.match(byId.get(stopped.id), { host: 'host-b', pid: 102, stoppedAt: String, alive: false });
    t.match(byId.get(silent.id), { host: 'host-c', version: '0.0.9', stoppedAt: null, alive: false });
  });

  t.test('lists the queues with their counts', async (t) => {
    await boss.send(QUEUES.executions.name, { probe: true });
    const { status, body } = await graphql(
      ops,
      '{ queues { name policy queuedCount readyCount activeCount failedCount totalCount countedAt } }',
    );
    t.equal(status, 200);
    const byName = new Map(body.data.queues.map((q: { name: string }) => [q.name, q]));
    // pg-boss may add internal queues of its own (`__pgboss__...`): ours must all be there.
    for (const { name } of Object.values(QUEUES)) t.ok(byName.has(name), name);
    t.match(byName.get(QUEUES.executions.name), {
      policy: 'standard',
      queuedCount: 1,
      readyCount: 1,
      activeCount: 0,
      totalCount: 1,
      countedAt: String,
    });
    t.match(byName.get(QUEUES.scheduleFires.name), { queuedCount: 0, totalCount: 0 });
  });
});
