import type { Queryable } from '../../shared/db/db.ts';
import type { Role } from '../../shared/roles.ts';
import type { UserRow } from './users.ts';
import { claimingAlias } from './unique.ts';

const USER_COLUMNS = 'u.id, u.alias, u.name, u.kind, u.email, u.anonymous, u.owner_id, u.created_at';

/** Ownership chains are at most this deep; the bound also stops a walk on a corrupted cycle. */
const MAX_OWNERSHIP_DEPTH = 32;

/** Creates a service account owned by `ownerId`. A taken alias is 409 `alias_taken`. */
export async function insertServiceAccount(
  q: Queryable,
  account: { ownerId: string; name: string; alias: string | null },
): Promise<UserRow> {
  const { rows } = await claimingAlias('user', () =>
    q.query<UserRow>(
      `INSERT INTO users AS u (kind, name, alias, owner_id) VALUES ('service', $1, $2, $3::uuid)
     RETURNING ${USER_COLUMNS}`,
      [account.name, account.alias, account.ownerId],
    ),
  );
  return rows[0]!;
}

/**
 * Locks the account and every service account below it (they are deleted with it by cascade)
 * and counts the organizations they own. Under these locks an organization cannot be created for
 * one of them until the delete has committed (Create Organization locks its owner's row).
 */
export async function lockAccountTree(q: Queryable, userId: string): Promise<{ accounts: number; orgs: number }> {
  const { rows } = await q.query<{ accounts: number; orgs: number }>(
    `WITH RECURSIVE tree(id, depth) AS (
       SELECT id, 0 FROM users WHERE id = $1::uuid
       UNION ALL
       SELECT u.id, t.depth + 1 FROM users u JOIN tree t ON u.owner_id = t.id WHERE t.depth < $2::int
     ), locked AS (
       SELECT u.id FROM users u WHERE u.id IN (SELECT id FROM tree) FOR UPDATE
     )
     SELECT (SELECT count(*) FROM locked)::int AS accounts,
            (SELECT count(*) FROM orgs o WHERE o.owner_id IN (SELECT id FROM locked))::int AS orgs`,
    [userId, MAX_OWNERSHIP_DEPTH],
  );
  return rows[0]!;
}

/**
 * Deletes an account. Its service accounts (and theirs), refresh tokens, API keys, memberships and
 * user-scoped credentials go by FK cascade in the same statement, so its keys stop working at once.
 */
export async function deleteAccount(q: Queryable, userId: string): Promise<UserRow | undefined> {
  const { rows } = await q.query<UserRow>(`DELETE FROM users u WHERE u.id = $1::uuid RETURNING ${USER_COLUMNS}`, [
    userId,
  ]);
  return rows[0];
}

/** The service accounts `ownerId` owns directly, oldest first. */
export async function ownedServiceAccounts(q: Queryable, ownerId: string): Promise<UserRow[]> {
  const { rows } = await q.query<UserRow>(
    `SELECT ${USER_COLUMNS} FROM users u WHERE u.owner_id = $1::uuid AND u.kind = 'service' ORDER BY u.created_at, u.id`,
    [ownerId],
  );
  return rows;
}

type StandingVia = 'owner' | 'member' | 'org_member';

export interface StandingRow {
  user: UserRow;
  role: Role;
  via: StandingVia;
}

/**
 * Every account with standing on an organization (`blobId` null) or on one blob of it, once each,
 * with its highest role and where that role comes from: the organization's owner, a membership on
 * the target itself (`member`), or, for a blob, a membership on its organization (`org_member`).
 * On a tie the most direct source is named. Public visibility, which gives `read` to everyone,
 * is not a standing of any one account and is not listed. Highest role first, then oldest grant.
 */
export async function accountsWithStanding(q: Queryable, orgId: string, blobId: string | null): Promise<StandingRow[]> {
  const { rows } = await q.query<{ user: UserRow; role: Role; via: StandingVia }>(
    `WITH grants AS (
       SELECT o.owner_id AS user_id, 'admin' AS role, 'owner' AS via, 0 AS directness, o.created_at AS since
         FROM orgs o WHERE o.id = $1::uuid
       UNION ALL
       SELECT m.user_id, m.role, 'member', 1, m.created_at
         FROM memberships m WHERE m.blob_id = $2::uuid
       UNION ALL
       SELECT m.user_id, m.role, CASE WHEN $2::uuid IS NULL THEN 'member' ELSE 'org_member' END, 2, m.created_at
         FROM memberships m WHERE m.org_id = $1::uuid
     ), ranked AS (
       SELECT g.*, CASE g.role WHEN 'admin' THEN 3 WHEN 'write' THEN 2 ELSE 1 END AS rank FROM grants g
     ), best AS (
       SELECT DISTINCT ON (user_id) * FROM ranked ORDER BY user_id, rank DESC, directness, since
     )
     SELECT json_build_object('id', u.id, 'alias', u.alias, 'name', u.name, 'kind', u.kind, 'email', u.email,
              'anonymous', u.anonymous, 'owner_id', u.owner_id, 'created_at', u.created_at) AS user,
            b.role, b.via
       FROM best b JOIN users u ON u.id = b.user_id
      ORDER BY b.rank DESC, b.directness, b.since, u.id`,
    [orgId, blobId],
  );
  // json_build_object renders timestamps without the pool's ISO normalisation.
  return rows.map((r) => ({ ...r, user: { ...r.user, created_at: new Date(r.user.created_at).toISOString() } }));
}
