import type { Queryable } from '../../shared/db/db.ts';
import { refColumn } from '../../shared/ids.ts';
import { ORG_COLUMNS, type OrgRow } from './orgs.ts';
import { claimingAlias } from './unique.ts';

export interface UserRow {
  id: string;
  alias: string | null;
  name: string;
  kind: 'human' | 'service';
  email: string | null;
  anonymous: boolean;
  owner_id: string | null;
  created_at: string;
}

const COLUMNS = 'id, alias, name, kind, email, anonymous, owner_id, created_at';

/** Everyone sees the public fields; the user itself also sees the private ones (docs/auth.md, "User profiles"). */
export function userProfile(row: UserRow, full: boolean): Record<string, unknown> {
  const pub = { id: row.id, alias: row.alias, name: row.name, kind: row.kind, created_at: row.created_at };
  if (!full) return pub;
  return {
    ...pub,
    email: row.email,
    anonymous: row.anonymous,
    ...(row.kind === 'service' ? { owner_id: row.owner_id } : {}),
  };
}

/**
 * Finds a user by id or alias (`me` is resolved by the caller before this). Only a canonical
 * lower-case UUID is matched against `id`; anything else, an upper-case UUID included, is an alias.
 */
export async function findUser(q: Queryable, ref: string): Promise<UserRow | undefined> {
  const { rows } = await q.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE ${refColumn(ref)} = $1`, [ref]);
  return rows[0];
}

export async function createAnonymousUser(q: Queryable): Promise<UserRow> {
  const { rows } = await q.query<UserRow>(
    `INSERT INTO users (kind, name, anonymous) VALUES ('human', 'Anonymous', true) RETURNING ${COLUMNS}`,
  );
  return rows[0]!;
}

/**
 * Finds or creates the human keyed by issuer + subject. The upsert keeps two simultaneous first
 * sign-ins from creating two accounts.
 */
export async function upsertOidcUser(
  q: Queryable,
  identity: { issuer: string; subject: string; email: string | null; name: string | null },
): Promise<UserRow> {
  const { rows } = await q.query<UserRow>(
    `INSERT INTO users (kind, name, email, oidc_issuer, oidc_subject)
     VALUES ('human', $3, $4, $1, $2)
     ON CONFLICT (oidc_issuer, oidc_subject) DO UPDATE SET email = COALESCE(EXCLUDED.email, users.email)
     RETURNING ${COLUMNS}`,
    [identity.issuer, identity.subject, identity.name ?? '', identity.email],
  );
  return rows[0]!;
}

export interface UserPatch {
  name?: string | undefined;
  /** A new alias, or null to remove it. */
  alias?: string | null | undefined;
}

/**
 * Applies the fields present in `patch`. The unique index on `users.alias` decides who gets an
 * alias (a check-then-update would race), and its violation becomes 409 `alias_taken`.
 * Undefined when the user is gone.
 */
export async function updateUser(q: Queryable, id: string, patch: UserPatch): Promise<UserRow | undefined> {
  const { rows } = await claimingAlias('user', () =>
    q.query<UserRow>(
      `UPDATE users SET name = COALESCE($2, name),
            alias = CASE WHEN $3::boolean THEN $4 ELSE alias END
      WHERE id = $1::uuid RETURNING ${COLUMNS}`,
      [id, patch.name ?? null, patch.alias !== undefined, patch.alias ?? null],
    ),
  );
  return rows[0];
}

/**
 * The organizations listed on a user's profile (`GET /users/:id/orgs`): those the user owns,
 * private ones only when `includePrivate` (the user itself is asking). Unpaginated; oldest first.
 */
export async function userOrgs(q: Queryable, userId: string, includePrivate: boolean): Promise<OrgRow[]> {
  const { rows } = await q.query<OrgRow>(
    `SELECT ${ORG_COLUMNS} FROM orgs o
      WHERE o.owner_id = $1::uuid AND ($2::boolean OR o.visibility = 'public')
      ORDER BY o.created_at, o.id`,
    [userId, includePrivate],
  );
  return rows;
}
