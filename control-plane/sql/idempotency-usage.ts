import type { Queryable } from '../../shared/db/db.ts';

// Takes one answer of `bytes` for the account when both of its counts stay within their bounds
// (the row's lock, held to commit, makes a concurrent taker wait and see this one). The triggers
// of migration 027 free it when the answer's row is deleted or taken over.
const TAKE_SQL = `
  INSERT INTO idempotency_usage AS u (account, answers, bytes) VALUES ($1::uuid, 1, $2::bigint)
  ON CONFLICT (account) DO UPDATE SET answers = u.answers + 1, bytes = u.bytes + EXCLUDED.bytes
   WHERE u.answers + 1 <= $3::bigint AND u.bytes + EXCLUDED.bytes <= $4::bigint
  RETURNING true AS taken`;

/**
 * Counts a stored answer of `bytes` against `account`; false (nothing counted) when it would pass
 * `maxAnswers` or `maxBytes`. The first answer of an account is checked by the caller.
 */
export async function takeAnswerSlot(
  tx: Queryable,
  account: string,
  bytes: number,
  bounds: { maxAnswers: number; maxBytes: number },
): Promise<boolean> {
  const { rows } = await tx.query(TAKE_SQL, [account, bytes, bounds.maxAnswers, bounds.maxBytes]);
  return rows.length === 1;
}

/**
 * Removes the account's answers past their lifetime now (the retention sweep would, within a
 * day), freeing their count; returns how many.
 */
export async function purgeExpiredAnswers(tx: Queryable, account: string, ttlSeconds: number): Promise<number> {
  const { rowCount } = await tx.query(
    `DELETE FROM idempotency_keys
      WHERE account = $1::uuid AND created_at < now() - make_interval(secs => $2::int)`,
    [account, ttlSeconds],
  );
  return rowCount ?? 0;
}

/** Seconds until the account's oldest stored answer expires (and frees its count); at least 1. */
export async function secondsUntilOldestExpires(q: Queryable, account: string, ttlSeconds: number): Promise<number> {
  const { rows } = await q.query<{ s: number | null }>(
    `SELECT ceil(extract(epoch FROM min(created_at) + make_interval(secs => $2::int) - now()))::int AS s
       FROM idempotency_keys WHERE account = $1::uuid AND status IS NOT NULL`,
    [account, ttlSeconds],
  );
  return Math.max(1, rows[0]?.s ?? 1);
}
