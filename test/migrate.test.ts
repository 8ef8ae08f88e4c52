import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import pg from 'pg';
import t from 'tap';
import { withDatabase } from '../shared/db/database-url.ts';
import { ensureDatabase } from '../shared/db/local-database.ts';
import { migrate } from '../shared/db/migrate.ts';
import { createTestDatabase } from './helpers/db.ts';

const files = (await readdir(new URL('../shared/db/migrations/', import.meta.url)))
  .filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f))
  .sort();

async function appliedNames(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name')).rows.map((r) => r.name);
  } finally {
    await client.end();
  }
}

t.test('five processes migrating a fresh database together apply each file once', async (t) => {
  t.ok(files.length > 0, 'there are migrations');
  const url = await createTestDatabase(t, { empty: true });
  const results = await Promise.all(Array.from({ length: 5 }, () => migrate(url)));
  t.same(results.flat().sort(), files, 'every file applied by exactly one caller');
  t.equal(results.filter((applied) => applied.length > 0).length, 1, 'the first to take the lock applies them all');
  t.same(await appliedNames(url), files, 'each file recorded once');
  t.same(await migrate(url), [], 'a later start applies nothing');
});

t.test('a failing migration is reported and leaves nothing half-applied', async (t) => {
  const url = await createTestDatabase(t, { empty: true });
  // A table the first migration creates already exists: its CREATE fails inside the transaction.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('CREATE TABLE users (id int)');
  await client.end();
  await t.rejects(migrate(url), { message: `migration ${files[0]} failed` });
  t.same(await appliedNames(url), [], 'nothing recorded');
});

t.test('ensureDatabase creates the database once, even when raced', async (t) => {
  const adminUrl = process.env.TEST_DATABASE_URL!;
  const name = 'ws_w_' + randomBytes(6).toString('hex');
  t.teardown(async () => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.end();
  });
  await Promise.all(Array.from({ length: 5 }, () => ensureDatabase(adminUrl, name)));
  await ensureDatabase(adminUrl, name);
  const client = new pg.Client({ connectionString: withDatabase(adminUrl, name) });
  await client.connect();
  const { rows } = await client.query<{ db: string }>('SELECT current_database() AS db');
  await client.end();
  t.equal(rows[0]!.db, name);
});
