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
