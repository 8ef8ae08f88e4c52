import { createHmac, timingSafeEqual } from 'node:crypto';
import { ServiceError } from './errors.ts';
import { canonicalJson } from './canonical-json.ts';

/**
 * Opaque cursors for keyset listings (List Revisions, and the opaque-cursor commands).
 *
 * A cursor is `<payload>.<mac>`: the payload is the base64url JSON of a keyset position (never an
 * offset), the mac an HMAC-SHA256 over a version tag, the listing's name, its filters and the
 * payload text exactly as sent. Binding the listing and filters means a cursor taken from one
 * listing, or from the same listing with other filters, fails verification instead of resuming
 * somewhere unrelated. The mac covers the payload's text rather than its decoded bytes, so two
 * spellings that decode alike (base64 padding bits) cannot both pass.
 */

const VERSION = 'c1';
/** Longer cursors are refused before any hashing; positions are a handful of scalars. */
export const MAX_CURSOR_LENGTH = 1024;
const PART = /^[A-Za-z0-9_-]+$/;

function mac(key: string, listing: string, filters: object, payload: string): string {
  if (key.length === 0) throw new Error('cursor key is empty');
  return createHmac('sha256', key)
    .update(JSON.stringify([VERSION, listing, canonicalJson(filters), payload]))
    .digest('base64url');
}

function invalid(): ServiceError {
  return new ServiceError('invalid_cursor');
}

/**
 * Issues the cursor that resumes `listing` (with exactly these `filters`) after `position`.
 * `key` is `config.secrets.CURSOR_KEY`; `position` must be JSON (e.g. `[created_at, id]` or a
 * revision number).
 */
export function encodeCursor(key: string, listing: string, filters: object, position: unknown): string {
  const json = JSON.stringify(position);
  if (json === undefined) throw new Error('cursor position must be JSON-serialisable');
  const payload = Buffer.from(json, 'utf8').toString('base64url');
  return `${payload}.${mac(key, listing, filters, payload)}`;
}

/**
 * Verifies a cursor that `encodeCursor` issued for the same `listing` and `filters` and returns
 * its position. Anything else (altered in any byte, forged, from another listing or filter set,
 * over-long) throws `invalid_cursor`. The caller still checks the position's shape.
 */
export function decodeCursor(key: string, listing: string, filters: object, cursor: string): unknown {
  if (typeof cursor !== 'string' || cursor.length > MAX_CURSOR_LENGTH) throw invalid();
  const parts = cursor.split('.');
  if (parts.length !== 2) throw invalid();
  const [payload, given] = parts as [string, string];
  if (!PART.test(payload) || !PART.test(given)) throw invalid();
  const expected = Buffer.from(mac(key, listing, filters, payload), 'latin1');
  const actual = Buffer.from(given, 'latin1');
  // Constant-time: the comparison must not reveal how many leading characters of a forgery match.
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) throw invalid();
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch (error) {
    // Unreachable unless the key signed a malformed payload; still answer as a bad cursor.
    throw new ServiceError('invalid_cursor', undefined, {}, { cause: error });
  }
}

export interface LimitRange {
  /** Used when the request names no limit. */
  fallback: number;
  max: number;
}

/**
 * Reads the `limit` of an opaque-cursor listing from a JSON body: absent → `fallback`; otherwise a
 * JSON number that is an integer in 1..`max`. Anything else — a string such as `"10"` included:
 * JSON has numbers — is `invalid_limit`; an out-of-range value is refused, never clamped.
 */
export function parseLimit(raw: unknown, range: LimitRange): number {
  if (raw === undefined) return range.fallback;
  const value = raw;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > range.max) {
    throw new ServiceError('invalid_limit', `limit must be an integer from 1 to ${range.max}.`);
  }
  return value;
}

/** As parseLimit, for a query string, where every value is text: `?limit=10` is the decimal digits. */
export function parseQueryLimit(raw: unknown, range: LimitRange): number {
  if (typeof raw !== 'string') return parseLimit(raw, range);
  return parseLimit(/^[0-9]{1,9}$/.test(raw) ? Number(raw) : Number.NaN, range);
}

/**
 * Splits rows read with `LIMIT limit + 1` into the page and whether more follow, so the last
 * page already answers a null cursor instead of a trailing empty page.
 */
export function keysetPage<R>(rows: R[], limit: number): { page: R[]; last: R | undefined; more: boolean } {
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { page, last: page.at(-1), more };
}
