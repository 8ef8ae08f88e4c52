/**
 * Telling "the database is unreachable" apart from every other failure: while PostgreSQL is down
 * or restarting, a request answers 503 `unavailable` with `Retry-After` (REST, WebSocket calls,
 * ops) instead of a 500, and the caller knows to try again (docs/operations.md, "Losing the
 * database").
 */
import { ServiceError } from '../errors.ts';

/** Seconds a refused caller is told to wait (`Retry-After`): the embedded server restarts within a few. */
export const RETRY_AFTER_SECONDS = 2;

/** Socket-level failures of reaching the server (Node's codes). */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * SQLSTATEs that mean the server is going away or not there yet: class 08 (connection
 * exception), 57P01–57P03 (admin shutdown, crash shutdown, cannot connect now: starting up or
 * recovering), 53300 (too many connections).
 */
function unavailableState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/** Messages node-postgres throws without a code when the connection drops or cannot be made in time. */
const DROPPED = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end)/;

/** True when `error` (or an error it wraps) says the database could not be reached. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && (NETWORK_CODES.has(code) || (/^[0-9A-Z]{5}$/.test(code) && unavailableState(code)))) return true;
    if (DROPPED.test(e.message)) return true;
    if (e instanceof AggregateError && e.errors.some((inner) => isDatabaseUnavailable(inner))) return true;
  }
  return false;
}

/** The refusal every surface answers with while the database is unreachable. */
export function databaseUnavailable(): ServiceError {
  return new ServiceError('unavailable', `The database cannot be reached; try again in ${RETRY_AFTER_SECONDS} s.`);
}
