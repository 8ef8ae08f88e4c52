/**
 * The removal and the listing of rows that belong to a target and hold a secret: API keys and
 * credentials (docs/access.md, "API keys", "Credentials"). Both are refused alike: a row whose
 * target the caller cannot see the secrets of is `not_found` (its existence is not revealed),
 * one it can see but not administer is `forbidden`.
 */
import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { roleAtLeast } from '../../shared/roles.ts';
import type { BaseContext } from '../base-context.ts';
import type { Principal } from '../auth/principal.ts';
import { resolveTarget, secretsVisibleFrom, targetStanding, type Target } from './targets.ts';

/** A row of a target: `target` and `target_id` name it. */
export interface TargetedRow {
  target: Target;
  target_id: string;
}

/** How one kind of targeted row is found and removed, and what its refusals say. */
export interface TargetedRemoval<Row extends TargetedRow> {
  /** `No such ….` */
  notFound: string;
  find(q: Queryable, id: string): Promise<Row | undefined>;
  remove(q: Queryable, id: string): Promise<Row | undefined>;
  /** Whether the caller may remove this row without admin on its target (a key's minter may). */
  mayWithoutAdmin?(principal: Principal, row: Row): boolean;
  /** The `forbidden` message for a caller who sees the row but does not administer its target. */
  forbidden(row: Row): string;
}

/**
 * Removes the row `id` in one transaction, after the checks above (or `mayWithoutAdmin`); the
 * removed row. The row is gone when this commits.
 */
export async function removeTargeted<Row extends TargetedRow>(
  ctx: BaseContext,
  principal: Principal,
  id: string,
  kind: TargetedRemoval<Row>,
): Promise<Row> {
  if (!isUuid(id)) throw new ServiceError('not_found', kind.notFound);
  return ctx.db.transaction(async (tx) => {
    const row = await kind.find(tx, id);
    if (!row) throw new ServiceError('not_found', kind.notFound);
    if (!kind.mayWithoutAdmin?.(principal, row)) {
      const found = await targetStanding(ctx, principal, row.target, row.target_id, tx);
      const role = found?.role ?? null;
      if (!roleAtLeast(role, secretsVisibleFrom(row.target))) throw new ServiceError('not_found', kind.notFound);
      if (!roleAtLeast(role, 'admin')) throw new ServiceError('forbidden', kind.forbidden(row));
    }
    const removed = await kind.remove(tx, id);
    if (!removed) throw new ServiceError('not_found', kind.notFound);
    return removed;
  });
}

/** The rows of a target the caller may see the secrets of (never the secrets themselves). */
export async function listTargeted<Row>(
  ctx: BaseContext,
  principal: Principal,
  params: { target: Target; target_id: string },
  list: (q: Queryable, target: Target, targetId: string) => Promise<Row[]>,
): Promise<Row[]> {
  const visible = secretsVisibleFrom(params.target);
  const target = await resolveTarget(ctx, principal, params.target, params.target_id, visible, {
    visibleFrom: visible,
  });
  return list(ctx.db, params.target, target.id);
}
