import type { Queryable } from '../../shared/db/db.ts';
import type { SealedSecret } from '../../shared/crypto/credential-cipher.ts';
import { TARGET_COLUMN, type Target } from './targets.ts';

export interface CredentialRow {
  id: string;
  name: string;
  target: Target;
  target_id: string;
  created_by: string | null;
  created_at: string;
  blob_ids: string[] | null;
}

// The sealed parts are never selected here: no listing or answer can carry them by mistake.
const COLUMNS = `c.id, c.name, c.target, COALESCE(c.org_id, c.blob_id, c.target_user_id) AS target_id, c.created_by, c.created_at, c.blob_ids::text[] AS blob_ids`;

/** The credential record, metadata only (docs/access.md, "Credentials"). */
export function credentialRecord(row: CredentialRow): Record<string, unknown> {
  return {
    id: row.id,
    name: row.name,
    target: row.target,
    target_id: row.target_id,
    created_by: row.created_by,
    created_at: row.created_at,
    blob_ids: row.blob_ids,
  };
}

export interface NewCredential {
  /** Chosen before sealing: the id is the cipher's associated data. */
  id: string;
  name: string;
  target: Target;
  targetId: string;
  sealed: SealedSecret;
  createdBy: string;
  /** The blobs an organization credential is restricted to; null: all of them. */
  blobIds: string[] | null;
}

export async function insertCredential(q: Queryable, c: NewCredential): Promise<CredentialRow> {
  const { rows } = await q.query<CredentialRow>(
    `INSERT INTO credentials AS c (id, name, target, ${TARGET_COLUMN[c.target]}, iv, auth_tag, ciphertext, created_by, blob_ids)
     VALUES ($1::uuid, $2, $3, $4::uuid, $5::bytea, $6::bytea, $7::bytea, $8::uuid, $9::uuid[]) RETURNING ${COLUMNS}`,
    [c.id, c.name, c.target, c.targetId, c.sealed.iv, c.sealed.authTag, c.sealed.ciphertext, c.createdBy, c.blobIds],
  );
  return rows[0]!;
}

/** How many of `blobIds` are blobs of organization `orgId` (restricting a credential names only its own blobs). */
export async function countOrgBlobs(q: Queryable, orgId: string, blobIds: string[]): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM blobs WHERE org_id = $1::uuid AND id = ANY ($2::uuid[])',
    [orgId, blobIds],
  );
  return rows[0]!.n;
}

export async function findCredential(q: Queryable, id: string): Promise<CredentialRow | undefined> {
  const { rows } = await q.query<CredentialRow>(`SELECT ${COLUMNS} FROM credentials c WHERE c.id = $1::uuid`, [id]);
  return rows[0];
}

export async function deleteCredential(q: Queryable, id: string): Promise<CredentialRow | undefined> {
  const { rows } = await q.query<CredentialRow>(
    `DELETE FROM credentials c WHERE c.id = $1::uuid RETURNING ${COLUMNS}`,
    [id],
  );
  return rows[0];
}

/** Every credential of a target, by name (a complete listing). */
export async function listCredentials(q: Queryable, target: Target, targetId: string): Promise<CredentialRow[]> {
  const { rows } = await q.query<CredentialRow>(
    `SELECT ${COLUMNS} FROM credentials c WHERE c.${TARGET_COLUMN[target]} = $1::uuid ORDER BY c.name, c.id`,
    [targetId],
  );
  return rows;
}

/**
 * The sealed secret of the credential named `name` on a target, for the runner to open with
 * `CredentialCipher.decrypt(sealed, id)`. Never used by a route.
 */
export async function findSealedCredential(
  q: Queryable,
  target: Target,
  targetId: string,
  name: string,
): Promise<{ id: string; sealed: SealedSecret } | undefined> {
  const { rows } = await q.query<{ id: string; iv: Buffer; auth_tag: Buffer; ciphertext: Buffer }>(
    `SELECT id, iv, auth_tag, ciphertext FROM credentials WHERE ${TARGET_COLUMN[target]} = $1::uuid AND name = $2`,
    [targetId, name],
  );
  const row = rows[0];
  return row && { id: row.id, sealed: { iv: row.iv, authTag: row.auth_tag, ciphertext: row.ciphertext } };
}
