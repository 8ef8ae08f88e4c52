import type { FastifyInstance } from 'fastify';
import type { PgBoss } from 'pg-boss';
import type { Test } from 'tap';
import { buildOpsApp } from '../../control-plane/ops/app.ts';
import type { Config } from '../../shared/config.ts';
import type { Db } from '../../shared/db/db.ts';
import { createBoss, createQueues } from '../../shared/queue/queues.ts';

/**
 * The operations API on the test database with a pg-boss of its own, both closed at `t`'s
 * teardown (call it inside a subtest, so pg-boss stops before the file's database is dropped).
 */
export async function startOpsApp(
  t: Test,
  options: { config: Config; db: Db; databaseUrl: string },
): Promise<{ ops: FastifyInstance; boss: PgBoss }> {
  const boss = createBoss(options.databaseUrl, 'control-plane');
  await boss.start();
  await createQueues(boss);
  const ops = await buildOpsApp({ config: options.config, db: options.db, boss, logger: false });
  t.teardown(async () => {
    await ops.close();
    await boss.stop({ graceful: false });
  });
  return { ops, boss };
}

/**
 * Posts a GraphQL `query` to the operations API with `authorization` (`Bearer <OPS_TOKEN>` as a
 * test passes it; null sends none): the answer's status, body (`{ data?, errors? }`) and headers.
 */
export async function opsRequest(
  ops: FastifyInstance,
  query: string,
  authorization: string | null,
): Promise<{ status: number; body: any; headers: Record<string, unknown> }> {
  const res = await ops.inject({
    method: 'POST',
    url: '/graphql',
    headers: authorization === null ? {} : { authorization },
    payload: { query },
  });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

/** The `data` of a GraphQL `query` to the operations API with the ops token of `config`; throws its errors. */
export async function opsData(ops: FastifyInstance, config: Config, query: string): Promise<any> {
  const { body } = await opsRequest(ops, query, `Bearer ${config.secrets.OPS_TOKEN}`);
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data;
}
