import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
// One fixed key: every process that starts applies migrations under the same lock.
const LOCK_KEY = 72_190_311;

/** The migration files this build ships, in order. */
export async function migrationFiles(): Promise<string[]> {
  return (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{3}_[a-z0-9_]+\.sql$/.test(f)).sort();
}

/** The SHA-256 of a migration's text, stored when it is applied. */
function checksum(sql: string): string {
  return createHash('sha256').update(sql).digest('hex');
}

/**
 * Earlier checksums of migration files whose comments alone were edited after they shipped (the
 * statements are byte for byte the same). A database that applied such a file under an earlier
 * text is not refused: its stored checksum is brought up to the file's current one. Every other
 * difference still stops start-up.
 */
export const COMMENT_ONLY_EDITS: Readonly<Record<string, readonly string[]>> = {
  // A comment named where the feature was planned instead of what it does.
  '022_idempotency_keys.sql': ['094bbc553d5de9e95d9367adbf3086f4919baf7f3dfe5284bb9c72afe5295aba'],
};

/** Whether `stored` is the checksum of `file`'s current text, or of an earlier text that differed in comments only. */
function sameText(file: string, stored: string, current: string): boolean {
  return stored === current || (COMMENT_ONLY_EDITS[file]?.includes(stored) ?? false);
}

const TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text`;

/** A migration file whose text differs from the one applied: start-up stops on it. */
export class ChangedMigrationError extends Error {
  constructor(files: string[]) {
    super(
      `${files.length === 1 ? 'An applied migration was' : 'Applied migrations were'} changed after it was applied: ${files.join(', ')}. ` +
        'Migrations are append-only: restore the file as it was and put the change in a new migration (npm run migrate -- status).',
    );
    this.name = 'ChangedMigrationError';
  }
}

export interface MigrationStatus {
  name: string;
  state: 'applied' | 'pending' | 'changed' | 'unknown';
  appliedAt: string | null;
}

/** Every migration file and every applied one, with its state (`npm run migrate -- status`). */
export async function migrationStatus(connectionString: string): Promise<MigrationStatus[]> {
  const client = new pg.Client({ connectionString, application_name: 'workspace-migrate' });
  await client.connect();
  try {
    const exists = (await client.query<{ ok: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS ok"))
      .rows[0]!.ok;
    const hasChecksum =
      exists &&
      (
        await client.query(
          "SELECT 1 FROM information_schema.columns WHERE table_name = 'schema_migrations' AND column_name = 'checksum'",
        )
      ).rows.length > 0;
    const applied = new Map<string, { appliedAt: string; checksum: string | null }>();
    if (exists) {
      const { rows } = await client.query<{ name: string; applied_at: Date; checksum: string | null }>(
        `SELECT name, applied_at, ${hasChecksum ? 'checksum' : 'NULL::text AS checksum'} FROM schema_migrations`,
      );
      for (const row of rows)
        applied.set(row.name, { appliedAt: new Date(row.applied_at).toISOString(), checksum: row.checksum });
    }
    const status: MigrationStatus[] = [];
    for (const file of await migrationFiles()) {
      const row = applied.get(file);
      applied.delete(file);
      if (!row) status.push({ name: file, state: 'pending', appliedAt: null });
      else {
        const same =
          row.checksum === null ||
          sameText(file, row.checksum, checksum(await readFile(MIGRATIONS_DIR + file, 'utf8')));
        status.push({ name: file, state: same ? 'applied' : 'changed', appliedAt: row.appliedAt });
      }
    }
    for (const [name, row] of applied) status.push({ name, state: 'unknown', appliedAt: row.appliedAt });
    return status;
  } finally {
    await client.end();
  }
}

/**
 * Applies numbered `NNN_name.sql` migrations not yet recorded, each in its own transaction,
 * under a session advisory lock so that processes starting together apply each file once. The
 * text of each applied file is checked against the checksum stored when it was applied (a row of
 * before checksums gets the current file's): a changed one stops start-up (ChangedMigrationError).
 */
export async function migrate(connectionString: string): Promise<string[]> {
  const client = new pg.Client({ connectionString, application_name: 'workspace-migrate' });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    await client.query(TABLE);
    const done = new Map(
      (
        await client.query<{ name: string; checksum: string | null }>('SELECT name, checksum FROM schema_migrations')
      ).rows.map((r) => [r.name, r.checksum]),
    );
    const files = await migrationFiles();
    const changed: string[] = [];
    for (const file of files) {
      if (!done.has(file)) continue;
      const sum = checksum(await readFile(MIGRATIONS_DIR + file, 'utf8'));
      const stored = done.get(file) ?? null;
      if (stored === null || (stored !== sum && sameText(file, stored, sum)))
        await client.query('UPDATE schema_migrations SET checksum = $2 WHERE name = $1', [file, sum]);
      else if (stored !== sum) changed.push(file);
    }
    if (changed.length > 0) throw new ChangedMigrationError(changed);
    for (const file of files) {
      if (done.has(file)) continue;
      const sql = await readFile(MIGRATIONS_DIR + file, 'utf8');
      try {
        await client.query('BEGIN');
        await client.query(sql);
        await client.query('INSERT INTO schema_migrations (name, checksum) VALUES ($1, $2)', [file, checksum(sql)]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw new Error(`migration ${file} failed`, { cause: error });
      }
      applied.push(file);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => {});
    await client.end();
  }
  return applied;
}
