import type { Queryable } from '../../shared/db/db.ts';
import type { Role } from '../../shared/roles.ts';
import { TARGET_COLUMN, type Target } from './targets.ts';
import { API_KEY_PREFIX } from '../../shared/api-key-format.ts';

export interface ApiKeyRow {
  id: string;
  public_id: string;
  name: string;
  target: Target;
  target_id: string;
  role: Role;
  user_id: string;
  created_by: string;
  created_at: string;
  last_used_at: string | null;
}

const COLUMNS = `k.id, k.public_id, k.name, k.target, COALESCE(k.org_id, k.blob_id, k.target_user_id) AS target_id,
  k.role, k.user_id, k.created_by, k.created_at, k.last_used_at`;

/** The key record as listings show it; the secret is never part of it (docs/access.md, "Minting"). */
export function apiKeyRecord(row: ApiKeyRow): Record<string, unknown> {
  return {
    id: row.id,
    name: row.name,
    target: row.target,
    target_id: row.target_id,
    role: row.role,
    user_id: row.user_id,
    prefix: API_KEY_PREFIX + row.public_id,
    created_by: row.created_by,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
  };
}

export interface NewApiKeyRow {
  publicId: string;
  secretHash: Buffer;
  name: string;
  target: Target;
  targetId: string;
  role: Role;
  /** The account the key authenticates as. */
  userId: string;
  createdBy: string;
}

export async function insertApiKey(q: Queryable, key: NewApiKeyRow): Promise<ApiKeyRow> {
  const { rows } = await q.query<ApiKeyRow>(
    `INSERT INTO api_keys AS k (public_id, secret_hash, name, target, ${TARGET_COLUMN[key.target]}, role, user_id, created_by)
     VALUES ($1, $2::bytea, $3, $4, $5::uuid, $6, $7::uuid, $8::uuid) RETURNING ${COLUMNS}`,
    [key.publicId, key.secretHash, key.name, key.target, key.targetId, key.role, key.userId, key.createdBy],
  );
  return rows[0]!;
}

export async function findApiKey(q: Queryable, id: string): Promise<ApiKeyRow | undefined> {
  const { rows } = await q.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys k WHERE k.id = $1::uuid`, [id]);
  return rows[0];
}

export async function deleteApiKey(q: Queryable, id: string): Promise<ApiKeyRow | undefined> {
  const { rows } = await q.query<ApiKeyRow>(`DELETE FROM api_keys k WHERE k.id = $1::uuid RETURNING ${COLUMNS}`, [id]);
  return rows[0];
}

/** Every key minted for a target, oldest first (a complete listing). */
export async function listApiKeys(q: Queryable, target: Target, targetId: string): Promise<ApiKeyRow[]> {
  const { rows } = await q.query<ApiKeyRow>(
    `SELECT ${COLUMNS} FROM api_keys k WHERE k.${TARGET_COLUMN[target]} = $1::uuid ORDER BY k.created_at, k.id`,
    [targetId],
  );
  return rows;
}

export interface ApiKeyAuthRow {
  id: string;
  secret_hash: Buffer;
  target: Target;
  target_id: string;
  role: Role;
  user_id: string;
  kind: 'human' | 'service';
  /** True when `last_used_at` is unset or over a minute old. */
  stale: boolean;
}

/**
 * The key with this public id and the kind of account it authenticates as. The join means a key
 * whose account is gone finds nothing (the foreign keys cascade as well).
 */
export async function findApiKeyForAuth(q: Queryable, publicId: string): Promise<ApiKeyAuthRow | undefined> {
  const { rows } = await q.query<ApiKeyAuthRow>(
    `SELECT k.id, k.secret_hash, k.target, COALESCE(k.org_id, k.blob_id, k.target_user_id) AS target_id, k.role,
            k.user_id, u.kind, (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute') AS stale
       FROM api_keys k JOIN users u ON u.id = k.user_id
      WHERE k.public_id = $1`,
    [publicId],
  );
  return rows[0];
}

/**
 * Records a use. At most one write a minute per key: the condition repeats the staleness test, so
 * concurrent requests of a busy key do not all write.
 */
export async function touchApiKey(q: Queryable, id: string): Promise<void> {
  await q.query(
    `UPDATE api_keys SET last_used_at = now()
      WHERE id = $1::uuid AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    [id],
  );
}
