/**
 * Telling "the database is unreachable" apart from every other failure: while PostgreSQL is down
 * or restarting, a request answers 503 `unavailable` with `Retry-After` (REST, WebSocket calls,
 * ops) instead of a 500, and the caller knows to try again (docs/operations.md, "Losing the
 * database").
 */
import { ServiceError } from '../errors.ts';

/** Seconds a refused caller is told to wait (`Retry-After`): the embedded server restarts within a few. */
export const RETRY_AFTER_SECONDS = 2;

/** Socket-level failures of reaching a server (Node's codes): the database's only when aimed at it. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * SQLSTATEs that mean the server is going away, not there yet, or not taking this work now:
 * class 08 (connection exception), 57P01–57P03 (admin shutdown, crash shutdown, cannot connect
 * now: starting up, shutting down or recovering), 53300 (too many connections, or the remaining
 * slots reserved), 25006 (a read-only transaction: the server is a standby, as after a failover
 * until the new primary is found), and 55000 when the server refused the connection itself
 * (severity FATAL: the database does not currently accept connections, `ALLOW_CONNECTIONS
 * false`) — 55000 of a statement is a state error of ours.
 */
function unavailableState(code: string, severity: unknown): boolean {
  return (
    code.startsWith('08') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === '53300' ||
    code === '25006' ||
    (code === '55000' && severity === 'FATAL')
  );
}

/** Marks errors thrown by a database connection's socket (shared/db/db.ts), whatever they name. */
const FROM_DATABASE_SOCKET = Symbol('from database socket');

/**
 * Notes that `error` came from a query of a database pool or client, so that a socket error
 * without an address (`read ECONNRESET`, `write EPIPE` of a connection the server dropped) reads
 * as the database's loss. Returns `error`.
 */
export function fromDatabase(error: unknown): unknown {
  if (error instanceof Error && typeof (error as { code?: unknown }).code === 'string')
    Object.defineProperty(error, FROM_DATABASE_SOCKET, { value: true });
  return error;
}

/** Messages only node-postgres throws, when a connection drops or cannot be made in time. */
const DROPPED =
  /^(Connection terminated|Connection ended unexpectedly|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end)/;

/** Hosts and ports of the databases this process opened pools to (shared/db/db.ts notes each). */
const endpoints = { hosts: new Set<string>(), ports: new Set<number>() };

/** Remembers a pool's server, so that a socket error aimed at it reads as the database's loss. */
export function noteDatabaseEndpoint(connectionString: string): void {
  try {
    const url = new URL(connectionString);
    endpoints.hosts.add(url.hostname.replace(/^\[|\]$/g, ''));
    endpoints.ports.add(Number(url.port || 5432));
  } catch {
    // Not a URL (a socket path, key=value form): only SQLSTATEs and pg's own messages count then.
  }
}

function aimedAtDatabase(e: { port?: unknown; address?: unknown; hostname?: unknown; host?: unknown }): boolean {
  if (typeof e.port === 'number') return endpoints.ports.has(e.port);
  for (const host of [e.hostname, e.host, e.address])
    if (typeof host === 'string' && endpoints.hosts.has(host)) return true;
  return false;
}

/**
 * True when `error` (or an error it wraps) says the database could not be reached: a SQLSTATE of
 * a server going away or starting, node-postgres's own messages for a dropped or timed-out
 * connection, or a socket error aimed at a database this process uses — not the same
 * ECONNREFUSED from an identity provider or an S3 store.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    const severity = (e as { severity?: unknown }).severity;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && 'severity' in e && unavailableState(code, severity))
      return true;
    if (
      typeof code === 'string' &&
      NETWORK_CODES.has(code) &&
      (FROM_DATABASE_SOCKET in e || aimedAtDatabase(e as never))
    )
      return true;
    if (DROPPED.test(e.message)) return true;
    if (e instanceof AggregateError && e.errors.some((inner) => isDatabaseUnavailable(inner))) return true;
  }
  return false;
}

/** The refusal every surface answers with while the database is unreachable. */
export function databaseUnavailable(): ServiceError {
  return new ServiceError('unavailable', `The database cannot be reached; try again in ${RETRY_AFTER_SECONDS} s.`);
}
