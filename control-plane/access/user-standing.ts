import type { Principal } from '../auth/principal.ts';
import type { Role } from '../../shared/roles.ts';
import { userStanding, type UserStandingRow } from './standing.ts';

/**
 * Admin standing over a user (docs/access.md, "Standing"): the user itself, or the owner of a
 * service account. Returns the role the caller may use over `user` through that standing, or null
 * when it holds none (any other caller, who may only read the public profile). Bearer and acting
 * tokens carry it in full; an API key caps it by its role, and a key confined to an organization or
 * blob only reads its own account (`userStanding` decides both).
 *
 * Ownership counts one level: the owner of a service account that owns another reaches the
 * second one by acting as the first.
 *
 * Self-or-admin reads (`GET /users/:id/limits`) need `roleAtLeast(result, 'read')`; changes such
 * as creating or retiring accounts and minting acting tokens need `'admin'`.
 */
export function userAdminStanding(principal: Principal, user: UserStandingRow): Role | null {
  const related = user.id === principal.userId || (user.kind === 'service' && user.owner_id === principal.userId);
  return related ? userStanding(principal, user) : null;
}
