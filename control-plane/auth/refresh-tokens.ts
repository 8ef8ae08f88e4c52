import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { BaseContext } from '../base-context.ts';
import type { Queryable } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';

const PREFIX = 'wsr_';

function hash(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Issues a refresh token in `familyId` (a new family for a new sign-in). Only its hash is stored. */
export async function issueRefreshToken(
  ctx: BaseContext,
  q: Queryable,
  userId: string,
  familyId: string = randomUUID(),
): Promise<string> {
  const token = PREFIX + randomBytes(32).toString('base64url');
  await q.query(
    `INSERT INTO refresh_tokens (user_id, family_id, token_hash, expires_at)
     VALUES ($1::uuid, $2::uuid, $3::bytea, now() + make_interval(secs => $4::int))`,
    [userId, familyId, hash(token), ctx.config.refreshTokenSeconds],
  );
  return token;
}

interface TokenRow {
  id: string;
  user_id: string;
  family_id: string;
  rotated_at: string | null;
  revoked_at: string | null;
  expired: boolean;
}

/**
 * Rotates a refresh token: the presented one stops working and a new one in the same family is
 * returned. Presenting an already rotated token means it leaked (or a client replayed it), so the
 * whole family is revoked and the caller gets 401; the revocation commits before the refusal.
 *
 * Race: `FOR UPDATE` serialises two rotations of one token. The second waits for the first to
 * commit, then re-reads the row (READ COMMITTED re-checks a locked row), sees `rotated_at` and is
 * treated as a replay. So two concurrent refreshes never both succeed, and because a replay cannot
 * be told apart from a thief racing the client, the family (the winner's new token included) is
 * revoked. Clients must not refresh the same token twice in parallel.
 */
export async function rotateRefreshToken(
  ctx: BaseContext,
  token: string,
): Promise<{ userId: string; refreshToken: string }> {
  const outcome = await ctx.db.transaction(async (tx) => {
    const { rows } = await tx.query<TokenRow>(
      `SELECT id, user_id, family_id, rotated_at, revoked_at, expires_at <= now() AS expired
         FROM refresh_tokens WHERE token_hash = $1::bytea FOR UPDATE`,
      [hash(token)],
    );
    const row = rows[0];
    if (!row || row.revoked_at !== null || row.expired) return { refused: true as const };
    if (row.rotated_at !== null) {
      await tx.query('UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = $1::uuid AND revoked_at IS NULL', [
        row.family_id,
      ]);
      return { refused: true as const };
    }
    await tx.query('UPDATE refresh_tokens SET rotated_at = now() WHERE id = $1::uuid', [row.id]);
    // Rotated tokens are kept to detect replays, but an expired one is refused before that check
    // matters, so the family's expired links can go: an active session's chain stays bounded.
    await tx.query('DELETE FROM refresh_tokens WHERE family_id = $1::uuid AND expires_at <= now()', [row.family_id]);
    const refreshToken = await issueRefreshToken(ctx, tx, row.user_id, row.family_id);
    return { refused: false as const, userId: row.user_id, refreshToken };
  });
  if (outcome.refused) throw new ServiceError('unauthorized', 'The refresh token is invalid, expired or revoked.');
  return { userId: outcome.userId, refreshToken: outcome.refreshToken };
}
