import type { Queryable } from '../db/db.ts';
import {
  loadOverrides,
  resolveLimit,
  resolveLimits,
  type LimitId,
  type OverrideTarget,
  type ResolvedLimit,
  type ResolvedLimits,
} from './index.ts';

/**
 * The values in force for a request about `target`: one query for the ownership chain and its
 * overrides (read on every request, so nothing is ever stale), then resolution in memory.
 */
export async function limitsInForce(q: Queryable, target: OverrideTarget): Promise<ResolvedLimits> {
  const { overrides } = await loadOverrides(q, target);
  return resolveLimits(overrides);
}

/** One limit's value in force for `target` (same single query; resolves only that limit). */
export async function limitInForce<I extends LimitId>(
  q: Queryable,
  target: OverrideTarget,
  id: I,
): Promise<ResolvedLimit<I>> {
  const { overrides } = await loadOverrides(q, target);
  return resolveLimit(id, overrides);
}
