import type { Queryable } from '../../shared/db/db.ts';
import type { SealedSecret } from '../../shared/crypto/credential-cipher.ts';

/** A key row another request committed: its fingerprint and the answer it stored. */
export interface StoredKeyRow {
  operation: string;
  fingerprint: Buffer;
  status: number;
  sealed: SealedSecret;
}

export interface KeyClaim {
  caller: string;
  /** The account whose stored answers the row counts against (idempotency_usage). */
  account: string;
  key: string;
  operation: string;
  fingerprint: Buffer;
  ttlSeconds: number;
}

// Inserted first in the creating transaction, after markInFlight: no other claim of the same
// (caller, key) is uncommitted, so this takes the conflict path on a committed row or inserts. A row past its lifetime is taken over (the retention sweep may
// not have removed it yet); a live one is left alone and no row comes back.
const CLAIM_SQL = `
  INSERT INTO idempotency_keys AS k (caller, key, operation, fingerprint, account)
  VALUES ($1::text, $2::text, $3::text, $4::bytea, $6::uuid)
  ON CONFLICT (caller, key) DO UPDATE
     SET operation = EXCLUDED.operation, fingerprint = EXCLUDED.fingerprint, account = EXCLUDED.account,
         status = NULL, iv = NULL, auth_tag = NULL, response = NULL, created_at = now()
   WHERE k.created_at < now() - make_interval(secs => $5::int)
  RETURNING true AS claimed`;

// Taken before the claim, for the rest of the transaction. A concurrent request with the same key
// finds it taken and is answered at once, instead of waiting on the claim's row lock (holding a
// pool connection) for as long as the first request takes. A 64-bit hash of caller and key: a
// collision between two keys in flight at once is vanishingly unlikely, and would only answer one
// of them "in progress".
const IN_FLIGHT_SQL = `SELECT pg_try_advisory_xact_lock(hashtextextended($1::text || E'\\n' || $2::text, 0)) AS free`;

/**
 * Marks `(caller, key)` as in flight in this transaction: false when another transaction has it
 * (a duplicate of a request still running). Never waits.
 */
export async function markInFlight(tx: Queryable, caller: string, key: string): Promise<boolean> {
  const { rows } = await tx.query<{ free: boolean }>(IN_FLIGHT_SQL, [caller, key]);
  return rows[0]!.free;
}

/**
 * Claims `(caller, key)` for this transaction: true when it is ours (new, or expired and taken
 * over), false when a live row committed by another request holds it (read it with
 * findStoredKey). Called after markInFlight, so no other claim of the key is uncommitted and
 * this never waits on one.
 */
export async function claimKey(tx: Queryable, claim: KeyClaim): Promise<boolean> {
  const { rows } = await tx.query(CLAIM_SQL, [
    claim.caller,
    claim.key,
    claim.operation,
    claim.fingerprint,
    claim.ttlSeconds,
    claim.account,
  ]);
  return rows.length === 1;
}

/** The live, committed row of `(caller, key)`; undefined if there is none (it expired since). */
export async function findStoredKey(
  q: Queryable,
  caller: string,
  key: string,
  ttlSeconds: number,
): Promise<StoredKeyRow | undefined> {
  const { rows } = await q.query<{
    operation: string;
    fingerprint: Buffer;
    status: number;
    iv: Buffer;
    auth_tag: Buffer;
    response: Buffer;
  }>(
    `SELECT operation, fingerprint, status, iv, auth_tag, response FROM idempotency_keys
      WHERE caller = $1::text AND key = $2::text AND status IS NOT NULL
        AND created_at >= now() - make_interval(secs => $3::int)`,
    [caller, key, ttlSeconds],
  );
  const row = rows[0];
  return (
    row && {
      operation: row.operation,
      fingerprint: row.fingerprint,
      status: row.status,
      sealed: { iv: row.iv, authTag: row.auth_tag, ciphertext: row.response },
    }
  );
}

/** Stores the answer of the claiming transaction, before it commits. */
export async function storeAnswer(
  tx: Queryable,
  caller: string,
  key: string,
  status: number,
  sealed: SealedSecret,
): Promise<void> {
  await tx.query(
    'UPDATE idempotency_keys SET status = $3::smallint, iv = $4::bytea, auth_tag = $5::bytea, response = $6::bytea WHERE caller = $1::text AND key = $2::text',
    [caller, key, status, sealed.iv, sealed.authTag, sealed.ciphertext],
  );
}
