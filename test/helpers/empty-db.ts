import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';
import { withDatabase } from '../../shared/db/database-url.ts';

/**
 * Creates an empty database (no migrations applied, unlike `createTestDatabase`) on the test
 * server; dropped at teardown. For tests of migrating itself.
 */
export async function createEmptyDatabase(t: Test): Promise<string> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error('run tests with `npm test` (it provides TEST_DATABASE_URL)');
  const name = 'ws_e_' + randomBytes(6).toString('hex');
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  t.teardown(async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  });
  return withDatabase(adminUrl, name);
}
