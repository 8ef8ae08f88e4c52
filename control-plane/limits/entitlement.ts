import type { Queryable } from '../../shared/db/db.ts';
import { limitInForce } from '../../shared/limits/in-force.ts';
import { limitRefusal, type LimitId, type LimitInForce } from '../../shared/limits/index.ts';

/**
 * A blob type's commands check its `<family>.enabled` entitlement on every call, not only when
 * the blob was created: an operator who turns a type off for an organization turns its existing
 * blobs' commands off too (400 `limit_exceeded` with `{id, value: false}`); reads and writes
 * resume when it is turned back on, with nothing lost.
 */
export async function requireEntitlement(
  q: Queryable,
  blobId: string,
  id: Extract<LimitId, `${string}.enabled`>,
): Promise<void> {
  requireEnabledLimit(await limitInForce(q, { blobId }, id));
}

/** As requireEntitlement, for a value already resolved (with the other limits of a request). */
export function requireEnabledLimit(enabled: LimitInForce): void {
  if (enabled.value !== true) {
    throw limitRefusal(
      'limit_exceeded',
      enabled,
      undefined,
      `This blob type is not enabled for the organization (${enabled.id} is ${String(enabled.value)}).`,
    );
  }
}
