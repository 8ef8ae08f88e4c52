import type { AppContext } from '../context.ts';
import type { Principal } from '../auth/principal.ts';
import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { refColumn } from '../../shared/ids.ts';
import { maxRole, roleAtLeast, type Role } from '../../shared/roles.ts';

export interface OrgRow {
  id: string;
  alias: string;
  name: string;
  visibility: 'private' | 'public';
  owner_id: string;
  created_at: string;
}

export interface BlobRow {
  id: string;
  alias: string;
  org_id: string;
  type: string;
  name: string;
  visibility: 'private' | 'public';
  status: 'ready' | 'failed';
  created_at: string;
}

export interface RevisionRow {
  id: string;
  blob_id: string;
  number: number;
  status: 'pending' | 'ready' | 'failed';
  created_at: string;
}

export const ORG_COLUMNS = 'o.id, o.alias, o.name, o.visibility, o.owner_id, o.created_at';
export const BLOB_COLUMNS = 'b.id, b.alias, b.org_id, b.type, b.name, b.visibility, b.status, b.created_at';
export const REVISION_COLUMNS = 'r.id, r.blob_id, r.number, r.status, r.created_at';

/** Standing on an organization: ownership gives admin, public visibility gives read. */
export function orgStanding(principal: Principal, org: OrgRow): Role | null {
  let role: Role | null = org.owner_id === principal.userId ? 'admin' : null;
  if (org.visibility === 'public') role = maxRole(role, 'read');
  return role;
}

/** Standing on a blob: the organization's owner holds admin on every blob; a public blob gives read. */
export function blobStanding(principal: Principal, org: OrgRow, blob: BlobRow): Role | null {
  let role: Role | null = org.owner_id === principal.userId ? 'admin' : null;
  if (blob.visibility === 'public') role = maxRole(role, 'read');
  return role;
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

export async function findOrg(q: Queryable, ref: string, lock = false): Promise<OrgRow | undefined> {
  const { rows } = await q.query<OrgRow>(`SELECT ${ORG_COLUMNS} FROM orgs o WHERE o.${refColumn(ref)} = $1${lock ? ' FOR UPDATE' : ''}`, [ref]);
  return rows[0];
}

/** Resolves an organization by id or alias and checks the caller's standing on it. */
export async function orgFor(ctx: AppContext, principal: Principal, ref: string, needed: Role, q: Queryable = ctx.db): Promise<{ org: OrgRow; role: Role }> {
  const org = await findOrg(q, ref);
  if (!org) throw new ServiceError('not_found', 'No such organization.');
  return { org, role: requireRole(orgStanding(principal, org), needed, 'organization') };
}

/** Resolves `/blobs/:org_id/:blob_id`: the blob must belong to that organization. */
export async function blobFor(ctx: AppContext, principal: Principal, orgRef: string, blobRef: string, needed: Role, q: Queryable = ctx.db): Promise<{ org: OrgRow; blob: BlobRow; role: Role }> {
  const org = await findOrg(q, orgRef);
  const { rows } = org
    ? await q.query<BlobRow>(`SELECT ${BLOB_COLUMNS} FROM blobs b WHERE b.${refColumn(blobRef)} = $1 AND b.org_id = $2::uuid`, [blobRef, org.id])
    : { rows: [] };
  const blob = rows[0];
  if (!org || !blob) throw new ServiceError('not_found', 'No such blob.');
  return { org, blob, role: requireRole(blobStanding(principal, org, blob), needed, 'blob') };
}

/** Resolves a revision by id with its blob and organization, and checks standing on the blob. */
export async function revisionFor(ctx: AppContext, principal: Principal, revisionId: string, needed: Role, q: Queryable = ctx.db): Promise<{ org: OrgRow; blob: BlobRow; revision: RevisionRow; role: Role }> {
  const { rows } = refColumn(revisionId) === 'id'
    ? await q.query<{ r: RevisionRow; b: BlobRow; o: OrgRow }>(
      `SELECT to_jsonb(r) AS r, to_jsonb(b) AS b, to_jsonb(o) AS o
         FROM revisions r JOIN blobs b ON b.id = r.blob_id JOIN orgs o ON o.id = b.org_id
        WHERE r.id = $1::uuid`, [revisionId])
    : { rows: [] };
  const row = rows[0];
  if (!row) throw new ServiceError('not_found', 'No such revision.');
  // to_jsonb renders timestamps without the ISO normalisation of the pool's type parser.
  const iso = <T extends { created_at: string }>(v: T): T => ({ ...v, created_at: new Date(v.created_at).toISOString() });
  const org = iso(row.o), blob = iso(row.b), revision = iso(row.r);
  return { org, blob, revision, role: requireRole(blobStanding(principal, org, blob), needed, 'revision') };
}
