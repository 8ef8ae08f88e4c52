import type { Config } from '../config.ts';

/** The database the service uses on the embedded server (its `postgres` database stays for admin). */
export const LOCAL_DATABASE = 'workspace';

/** `url` with its database name replaced. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = '/' + database;
  return u.toString();
}

/**
 * `DATABASE_URL`, or else the `workspace` database on the embedded server that the control plane
 * (or `npm start`) runs on `EMBEDDED_PG_PORT`, with the credentials `embedded.ts` initialises.
 */
export function databaseUrlFor(config: Config): string {
  return config.databaseUrl ?? `postgres://postgres:postgres@127.0.0.1:${config.embeddedPgPort}/${LOCAL_DATABASE}`;
}
