import type { Principal } from '../auth/principal.ts';
import type { Queryable } from '../../shared/db/db.ts';
import { preparedQuery } from '../../shared/db/prepared-query.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid, refColumn } from '../../shared/ids.ts';
import { maxRole, minRole, roleAtLeast, type Role } from '../../shared/roles.ts';
import { BLOB_FIELDS, type BlobRow } from '../sql/blobs.ts';
import { GRANT } from '../sql/grant.ts';
import { ORG_COLUMNS, ORG_FIELDS, type OrgRow } from '../sql/orgs.ts';
import { pick, prefixed } from '../sql/prefixed-columns.ts';
import { REVISION_FIELDS, type RevisionRow } from '../sql/revisions.ts';

/**
 * Standing (docs/access.md, "Standing"): the organization's owner holds admin on it and every blob
 * in it; an organization membership gives its role on the organization and every blob in it; a blob
 * membership gives its role on that blob; `public` visibility gives read to every authenticated
 * caller. Standing is the highest of these. An API key then confines and caps it (see `keyCap`),
 * here and nowhere else, so every route that asks these functions gets the role cap for free.
 */

/** The user fields standing over an account depends on. */
export interface UserStandingRow {
  id: string;
  kind: 'human' | 'service';
  owner_id: string | null;
}

/**
 * SQL expression for the highest membership role of the account in `userParam` on organization
 * `org` or blob `blob` (SQL expressions naming their ids; give one or both). Roles are text, so
 * they are ranked by their position in the role order.
 */
function memberRoleSql(userParam: string, on: { org?: string; blob?: string }): string {
  const where = [on.org && `m.org_id = ${on.org}`, on.blob && `m.blob_id = ${on.blob}`].filter(Boolean).join(' OR ');
  if (!where) throw new Error('memberRoleSql needs an organization or a blob');
  return `(SELECT m.role FROM memberships m WHERE m.user_id = ${userParam} AND (${where})
            ORDER BY array_position(ARRAY['read', 'write', 'admin'], m.role) DESC LIMIT 1)`;
}

/** Records on `row` the membership role a query computed for `principal`; returns the row. */
function withGrant<T extends OrgRow | BlobRow>(row: T, principal: Principal, role: Role | null): T {
  row[GRANT] = { userId: principal.userId, role };
  return row;
}

/** The membership role carried by `row`, if it was computed for this caller. */
function grantOf(principal: Principal, row: OrgRow | BlobRow): Role | null {
  const grant = row[GRANT];
  return grant !== undefined && grant.userId === principal.userId ? grant.role : null;
}

/**
 * Attaches the caller's blob memberships to blobs read by a listing (one query for the page), so
 * `blobStanding` sees them; organization memberships travel on the org row from `orgFor`.
 */
export async function attachBlobGrants(q: Queryable, principal: Principal, blobs: BlobRow[]): Promise<BlobRow[]> {
  if (blobs.length === 0) return blobs;
  const { rows } = await q.query<{ blob_id: string; role: Role }>(
    'SELECT blob_id, role FROM memberships WHERE user_id = $1::uuid AND blob_id = ANY($2::uuid[])',
    [principal.userId, blobs.map((b) => b.id)],
  );
  const roles = new Map(rows.map((r) => [r.blob_id, r.role]));
  for (const blob of blobs) withGrant(blob, principal, roles.get(blob.id) ?? null);
  return blobs;
}

/**
 * An API key's confinement and role cap (docs/access.md, "Using a key"). A key minted for an
 * organization or blob reaches only that target (for an organization, the blobs in it too);
 * outside it the caller has no standing at all, public visibility included. Inside, and
 * everywhere for a `user` key, the role is the lesser of the key's role and the account's own.
 * Bearer and acting tokens are not capped.
 */
function keyCap(principal: Principal, role: Role | null, scope: { orgId?: string; blobId?: string }): Role | null {
  const key = principal.key;
  if (!key) return role;
  if (key.target === 'organization' && scope.orgId !== key.targetId) return null;
  if (key.target === 'blob' && (scope.blobId === undefined || scope.blobId !== key.targetId)) return null;
  return minRole(role, key.role);
}

/**
 * Standing on an organization. `memberRole` defaults to the one carried by a row from `orgFor`;
 * a row read elsewhere carries none, so pass it (see `memberRoleSql`) or standing misses memberships.
 */
export function orgStanding(
  principal: Principal,
  org: OrgRow,
  memberRole: Role | null = grantOf(principal, org),
): Role | null {
  let role: Role | null = org.owner_id === principal.userId ? 'admin' : null;
  role = maxRole(role, memberRole);
  if (org.visibility === 'public') role = maxRole(role, 'read');
  return keyCap(principal, role, { orgId: org.id });
}

/**
 * Standing on a blob: ownership of its organization, the organization membership carried by
 * `org`, the blob membership carried by `blob`, and the blob's own visibility.
 */
export function blobStanding(
  principal: Principal,
  org: OrgRow,
  blob: BlobRow,
  memberRole: Role | null = maxRole(grantOf(principal, org), grantOf(principal, blob)),
): Role | null {
  let role: Role | null = org.owner_id === principal.userId ? 'admin' : null;
  role = maxRole(role, memberRole);
  if (blob.visibility === 'public') role = maxRole(role, 'read');
  return keyCap(principal, role, { orgId: org.id, blobId: blob.id });
}

/**
 * Standing over an account (docs/access.md, "Standing"): admin for the account itself and for the
 * owner of a service account; read (its public profile) for everyone else. A key for an
 * organization or blob reaches only its own account, and that only to read; other accounts do not
 * exist for it.
 */
export function userStanding(principal: Principal, user: UserStandingRow): Role | null {
  const self = user.id === principal.userId;
  const role: Role = self || (user.kind === 'service' && user.owner_id === principal.userId) ? 'admin' : 'read';
  const key = principal.key;
  if (!key) return role;
  if (key.target === 'user') return minRole(role, key.role);
  return self ? minRole('read', key.role) : null;
}

/**
 * What the caller may not read does not exist for it (404); what it may read but not change is
 * 403. Existence never leaks through a 403.
 */
export function requireRole(standing: Role | null, needed: Role, what: string): Role {
  if (!roleAtLeast(standing, 'read')) throw new ServiceError('not_found', `No such ${what}.`);
  if (!roleAtLeast(standing, needed)) throw new ServiceError('forbidden', `This needs ${needed} on the ${what}.`);
  return standing!;
}

/**
 * An organization by id or alias with the caller's membership on it: one query reads the
 * organization (owner, visibility) and the membership. No standing check.
 */
export async function loadOrg(q: Queryable, principal: Principal, ref: string): Promise<OrgRow | undefined> {
  const { rows } = await q.query<OrgRow & { member_role: Role | null }>(
    `SELECT ${ORG_COLUMNS}, ${memberRoleSql('$2::uuid', { org: 'o.id' })} AS member_role
       FROM orgs o WHERE o.${refColumn(ref)} = $1`,
    [ref, principal.userId],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { member_role, ...org } = row;
  return withGrant(org, principal, member_role);
}

/** Resolves an organization by id or alias and checks the caller's standing on it. */
export async function orgFor(
  q: Queryable,
  principal: Principal,
  ref: string,
  needed: Role,
): Promise<{ org: OrgRow; role: Role }> {
  const org = await loadOrg(q, principal, ref);
  if (!org) throw new ServiceError('not_found', 'No such organization.');
  return { org, role: requireRole(orgStanding(principal, org), needed, 'organization') };
}

interface BlobJoinRow extends Record<string, unknown> {
  org_role: Role | null;
  blob_role: Role | null;
}

/**
 * One query for a blob, its organization and the caller's memberships on both; no standing
 * check. `orgRef` null: the blob alone names it (aliases and ids are global), as a `target_id` does.
 */
export async function loadBlob(
  q: Queryable,
  principal: Principal,
  orgRef: string | null,
  blobRef: string,
): Promise<{ org: OrgRow; blob: BlobRow } | undefined> {
  const { rows } = await q.query<BlobJoinRow>(
    `SELECT ${prefixed('o', ORG_FIELDS)}, ${prefixed('b', BLOB_FIELDS)},
            ${memberRoleSql('$2::uuid', { org: 'o.id' })} AS org_role,
            ${memberRoleSql('$2::uuid', { blob: 'b.id' })} AS blob_role
       FROM blobs b JOIN orgs o ON o.id = b.org_id
      WHERE b.${refColumn(blobRef)} = $1${orgRef === null ? '' : ` AND o.${refColumn(orgRef)} = $3`}`,
    orgRef === null ? [blobRef, principal.userId] : [blobRef, principal.userId, orgRef],
  );
  const row = rows[0];
  if (!row) return undefined;
  const org = withGrant(pick<OrgRow>(row, 'o', ORG_FIELDS), principal, row.org_role);
  const blob = withGrant(pick<BlobRow>(row, 'b', BLOB_FIELDS), principal, row.blob_role);
  return { org, blob };
}

/** Resolves `/blobs/:org_id/:blob_id`: the blob must belong to that organization. */
export async function blobFor(
  q: Queryable,
  principal: Principal,
  orgRef: string,
  blobRef: string,
  needed: Role,
): Promise<{ org: OrgRow; blob: BlobRow; role: Role }> {
  const found = await loadBlob(q, principal, orgRef, blobRef);
  if (!found) throw new ServiceError('not_found', 'No such blob.');
  return { ...found, role: requireRole(blobStanding(principal, found.org, found.blob), needed, 'blob') };
}

// Every revision command runs this first: one constant text, sent as a named prepared statement,
// so PostgreSQL parses and plans it once per connection rather than on every command.
const REVISION_SCOPE_SQL = `SELECT ${prefixed('r', REVISION_FIELDS)}, ${prefixed('b', BLOB_FIELDS)}, ${prefixed('o', ORG_FIELDS)},
            ${memberRoleSql('$2::uuid', { org: 'o.id' })} AS org_role,
            ${memberRoleSql('$2::uuid', { blob: 'b.id' })} AS blob_role
       FROM revisions r JOIN blobs b ON b.id = r.blob_id JOIN orgs o ON o.id = b.org_id
      WHERE r.id = $1::uuid`;

/** Resolves a revision by id with its blob and organization, and checks standing on the blob. */
export async function revisionFor(
  q: Queryable,
  principal: Principal,
  revisionId: string,
  needed: Role,
): Promise<{ org: OrgRow; blob: BlobRow; revision: RevisionRow; role: Role }> {
  if (!isUuid(revisionId)) throw new ServiceError('not_found', 'No such revision.');
  const { rows } = await preparedQuery<BlobJoinRow>(q, 'cp_revision_scope', REVISION_SCOPE_SQL, [
    revisionId,
    principal.userId,
  ]);
  const row = rows[0];
  if (!row) throw new ServiceError('not_found', 'No such revision.');
  const org = withGrant(pick<OrgRow>(row, 'o', ORG_FIELDS), principal, row.org_role);
  const blob = withGrant(pick<BlobRow>(row, 'b', BLOB_FIELDS), principal, row.blob_role);
  const revision = pick<RevisionRow>(row, 'r', REVISION_FIELDS);
  return { org, blob, revision, role: requireRole(blobStanding(principal, org, blob), needed, 'revision') };
}
