import { z } from 'zod';
import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { roleAtLeast, type Role } from '../../shared/roles.ts';
import type { BaseContext } from '../base-context.ts';
import type { Principal } from '../auth/principal.ts';
import type { Target } from '../sql/targets.ts';
import { findUser, type UserRow } from '../sql/users.ts';
import type { BlobRow } from '../sql/blobs.ts';
import type { OrgRow } from '../sql/orgs.ts';
import { blobStanding, loadBlob, loadOrg, orgStanding, userStanding } from './standing.ts';

/**
 * `target` + `target_id` in the keys, credentials and members routes (docs/access.md,
 * "Memberships"): an organization, a blob (its id or alias alone names it) or a user (`me` included).
 */
const TARGETS = ['organization', 'blob', 'user'] as const satisfies readonly Target[];
export type { Target };
export const targetSchema = z.enum(TARGETS);
export const targetIdSchema = refSchema;

const WHAT: Record<Target, string> = { organization: 'organization', blob: 'blob', user: 'user' };

/** A target found, with the caller's standing on it (null: none). */
export interface TargetStanding {
  target: Target;
  /** The target's id (aliases resolved). */
  id: string;
  role: Role | null;
  org?: OrgRow;
  blob?: BlobRow;
  user?: UserRow;
}

/** Finds a target and the caller's standing on it, in one query; undefined when none exists. */
export async function targetStanding(
  ctx: BaseContext,
  principal: Principal,
  target: Target,
  ref: string,
  q: Queryable = ctx.db,
): Promise<TargetStanding | undefined> {
  switch (target) {
    case 'organization': {
      const org = await loadOrg(q, principal, ref);
      return org && { target, id: org.id, role: orgStanding(principal, org), org };
    }
    case 'blob': {
      const found = await loadBlob(q, principal, null, ref);
      return found && { target, id: found.blob.id, role: blobStanding(principal, found.org, found.blob), ...found };
    }
    case 'user': {
      // `me` resolves to the caller before any authorization check (docs/auth.md, "User profiles").
      const user = await findUser(q, ref === 'me' ? principal.userId : ref);
      return user && { target, id: user.id, role: userStanding(principal, user), user };
    }
  }
}

export interface ResolveOptions {
  /**
   * Below this standing the target does not exist for the caller (404); from it up to `needed`
   * the answer is 403. Default `read`. Keys and credentials of an account are visible only to
   * those with admin standing over it, though its public profile is readable by everyone.
   */
  visibleFrom?: Role;
  q?: Queryable;
}

/** Resolves a target and requires `needed` standing on it: 404 when invisible, 403 when short. */
export async function resolveTarget(
  ctx: BaseContext,
  principal: Principal,
  target: Target,
  ref: string,
  needed: Role,
  options: ResolveOptions = {},
): Promise<TargetStanding & { role: Role }> {
  const found = await targetStanding(ctx, principal, target, ref, options.q ?? ctx.db);
  const what = WHAT[target];
  if (!found || !roleAtLeast(found.role, options.visibleFrom ?? 'read'))
    throw new ServiceError('not_found', `No such ${what}.`);
  if (!roleAtLeast(found.role, needed)) throw new ServiceError('forbidden', `This needs ${needed} on the ${what}.`);
  return found as TargetStanding & { role: Role };
}

/**
 * Who may see the keys and credentials of a target: readers of an organization or blob, but only
 * those with admin standing over an account (everyone can read an account's public profile).
 */
export function secretsVisibleFrom(target: Target): Role {
  return target === 'user' ? 'admin' : 'read';
}

const FOREIGN_KEY_VIOLATION = '23503';

/**
 * Runs an insert that references a target resolved earlier in the transaction. A target or
 * account deleted concurrently violates a foreign key: that is 404 like any missing target,
 * not a 500.
 */
export async function whileTargetExists<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === FOREIGN_KEY_VIOLATION) {
      throw new ServiceError('not_found', 'The target no longer exists.', {}, { cause: error });
    }
    throw error;
  }
}
