import type { Queryable } from '../../shared/db/db.ts';
import { refColumn } from '../../shared/ids.ts';

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

/** Contract §4: everyone sees the public fields; the user itself also sees the private ones. */
export function userProfile(row: UserRow, full: boolean): Record<string, unknown> {
  const pub = { id: row.id, alias: row.alias, name: row.name, kind: row.kind, created_at: row.created_at };
  if (!full) return pub;
  return { ...pub, email: row.email, anonymous: row.anonymous, ...(row.kind === 'service' ? { owner_id: row.owner_id } : {}) };
}

/** Finds a user by id or alias (`me` is resolved by the caller before this). */
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
export async function upsertOidcUser(q: Queryable, identity: { issuer: string; subject: string; email: string | null; name: string | null }): Promise<UserRow> {
  const { rows } = await q.query<UserRow>(
    `INSERT INTO users (kind, name, email, oidc_issuer, oidc_subject)
     VALUES ('human', $3, $4, $1, $2)
     ON CONFLICT (oidc_issuer, oidc_subject) DO UPDATE SET email = COALESCE(EXCLUDED.email, users.email)
     RETURNING ${COLUMNS}`,
    [identity.issuer, identity.subject, identity.name ?? '', identity.email],
  );
  return rows[0]!;
}
