import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';
import { withDatabase } from '../../shared/db/database-url.ts';

function adminUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url || !process.env.TEST_TEMPLATE_DB)
    throw new Error('run tests with `npm test` (it provides TEST_DATABASE_URL)');
  return url;
}

async function adminQuery(sql: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

/**
 * Creates a database of the test file's own on the test server, dropped at teardown: a clone of
 * the migrated template, or (`empty`) one with nothing applied, for tests of migrating itself.
 */
export async function createTestDatabase(t: Test, options: { empty?: boolean } = {}): Promise<string> {
  const name = (options.empty ? 'ws_e_' : 'ws_t_') + randomBytes(6).toString('hex');
  await adminQuery(
    options.empty ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${process.env.TEST_TEMPLATE_DB}`,
  );
  t.teardown(() => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  return withDatabase(adminUrl(), name);
}
