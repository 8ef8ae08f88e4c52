import { ServiceError } from '../../shared/errors.ts';

const UNIQUE_VIOLATION = '23505';

/** True when `error` is PostgreSQL's unique violation, optionally on a constraint matching `constraint`. */
export function isUniqueViolation(error: unknown, constraint?: RegExp): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, constraint: name } = error as { code?: unknown; constraint?: unknown };
  if (code !== UNIQUE_VIOLATION) return false;
  return constraint === undefined || (typeof name === 'string' && constraint.test(name));
}

/**
 * Runs a statement that sets an alias. The unique index is the arbiter (a check-then-insert
 * would race), so its violation is turned into 409 `alias_taken` here, in one place, for every
 * kind: users, organizations, blobs, and the per-revision aliases of definitions, sessions and
 * schedules (any unique constraint whose name mentions `alias`). Other violations pass through
 * unchanged.
 */
export async function claimingAlias<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (isUniqueViolation(error, /alias/)) {
      throw new ServiceError('alias_taken', `That alias is already used by another ${what}.`, {}, { cause: error });
    }
    throw error;
  }
}
