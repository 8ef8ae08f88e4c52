import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';

/** Creates a database of the test file's own from the migrated template; dropped at teardown. */
export async function createTestDatabase(t: Test): Promise<string> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  const template = process.env.TEST_TEMPLATE_DB;
  if (!adminUrl || !template) throw new Error('run tests with `npm test` (it provides TEST_DATABASE_URL)');
  const name = 'ws_t_' + randomBytes(6).toString('hex');
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${template}`);
  } finally {
    await admin.end();
  }
  t.teardown(async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  });
  const url = new URL(adminUrl);
  url.pathname = '/' + name;
  return url.toString();
}
