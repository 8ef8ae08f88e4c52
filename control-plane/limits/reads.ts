import { isBlobType } from '../../shared/blob-types.ts';
import type { Queryable } from '../../shared/db/db.ts';
import {
  blobLimitsReply,
  loadOverrides,
  orgLimitsReply,
  userLimitsReply,
  type LimitGroupReply,
} from '../../shared/limits/index.ts';
import { heldBy } from '../../shared/limits/holdings.ts';

/** The record a limits read is about, by id (access is the caller's to check first). */
export type LimitsReadTarget =
  | { targetType: 'user'; id: string }
  | { targetType: 'org'; id: string }
  | { targetType: 'blob'; id: string; blobType: string };

/**
 * The `groups` of a limits read (docs/limits.md, "Limits reads"): Get User Limits, Get Organization Limits or Get
 * Blob Limits, with the overrides of the ownership chain as it is now and `held` on the quotas the
 * target holds. The REST routes and the ops API's `limitsInForce` both answer with this, so an
 * operator sees exactly what the account sees.
 */
export async function limitsRead(q: Queryable, target: LimitsReadTarget): Promise<LimitGroupReply[]> {
  switch (target.targetType) {
    case 'user': {
      const [{ overrides }, held] = await Promise.all([
        loadOverrides(q, { userId: target.id }),
        heldBy(q, 'user', target.id),
      ]);
      return userLimitsReply(overrides, held);
    }
    case 'org': {
      const [{ overrides }, held] = await Promise.all([
        loadOverrides(q, { orgId: target.id }),
        heldBy(q, 'org', target.id),
      ]);
      return orgLimitsReply(overrides, held);
    }
    case 'blob': {
      // The type column is checked on insert; a row with another type is a broken invariant.
      if (!isBlobType(target.blobType)) throw new Error(`blob ${target.id} has the unknown type ${target.blobType}`);
      const [{ overrides }, held] = await Promise.all([
        loadOverrides(q, { blobId: target.id }),
        heldBy(q, 'blob', target.id),
      ]);
      return blobLimitsReply(target.blobType, overrides, held);
    }
  }
}
