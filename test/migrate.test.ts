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
    return (await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name')).rows.map(
      (r) => r.name,
    );
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

t.test('an applied migration changed afterwards stops start-up with a clear message; status shows it', async (t) => {
  const { migrationStatus, ChangedMigrationError } = await import('../shared/db/migrate.ts');
  const url = await createTestDatabase(t, { empty: true });
  await migrate(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  const { rows } = await client.query<{ checksum: string }>('SELECT checksum FROM schema_migrations WHERE name = $1', [
    files[0],
  ]);
  t.match(rows[0]!.checksum, /^[0-9a-f]{64}$/, 'the checksum of each applied file is stored');
  t.ok(
    (await migrationStatus(url)).every((row) => row.state === 'applied'),
    'status: all applied',
  );
  // As if the file had been edited after it was applied.
  await client.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [files[1], 'f'.repeat(64)]);
  await client.query(`INSERT INTO schema_migrations (name, checksum) VALUES ('999_from_elsewhere.sql', NULL)`);
  const error = await migrate(url).catch((e: unknown) => e);
  t.ok(error instanceof ChangedMigrationError);
  t.match(
    (error as Error).message,
    new RegExp(`changed after it was applied: ${files[1]}\\. Migrations are append-only`),
  );
  const status = await migrationStatus(url);
  t.match(
    status.find((r) => r.name === files[1]),
    { state: 'changed' },
  );
  t.match(
    status.find((r) => r.name === '999_from_elsewhere.sql'),
    { state: 'unknown' },
  );
  // A file whose comments alone changed since it was applied (COMMENT_ONLY_EDITS) is not refused,
  // and its stored checksum is brought up to date; any other earlier text still is.
  const { COMMENT_ONLY_EDITS } = await import('../shared/db/migrate.ts');
  const [edited, earlier] = Object.entries(COMMENT_ONLY_EDITS)[0]!;
  await client.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [files[1], null]);
  await client.query(`DELETE FROM schema_migrations WHERE name = '999_from_elsewhere.sql'`);
  await client.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [edited, earlier[0]]);
  t.match(
    (await migrationStatus(url)).find((r) => r.name === edited),
    { state: 'applied' },
  );
  t.same(await migrate(url), [], 'an earlier text differing in comments only: nothing to apply, no complaint');
  const { rows: updated } = await client.query<{ checksum: string }>(
    'SELECT checksum FROM schema_migrations WHERE name = $1',
    [edited],
  );
  t.not(updated[0]!.checksum, earlier[0], 'the stored checksum is the current text');
  const { readFileSync } = await import('node:fs');
  const { createHash } = await import('node:crypto');
  const current = readFileSync(new URL(`../shared/db/migrations/${edited}`, import.meta.url), 'utf8');
  t.equal(updated[0]!.checksum, createHash('sha256').update(current).digest('hex'));
  await client.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [edited, 'e'.repeat(64)]);
  t.ok((await migrate(url).catch((e: unknown) => e)) instanceof ChangedMigrationError, 'any other text still stops it');
  await client.query(`INSERT INTO schema_migrations (name, checksum) VALUES ('999_from_elsewhere.sql', NULL)`);
  // A row applied before checksums existed takes the file's on the next start.
  await client.query('UPDATE schema_migrations SET checksum = NULL');
  t.same(await migrate(url), [], 'nothing to apply, no complaint');
  t.equal(
    (
      await client.query('SELECT count(*)::int AS n FROM schema_migrations WHERE checksum IS NULL AND name <> $1', [
        '999_from_elsewhere.sql',
      ])
    ).rows[0].n,
    0,
    'checksums filled in',
  );
});
