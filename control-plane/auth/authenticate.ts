import type { IncomingHttpHeaders } from 'node:http';
import type { BaseContext } from '../base-context.ts';
import type { TokenService } from './tokens.ts';
import { ServiceError } from '../../shared/errors.ts';
import { preparedQuery } from '../../shared/db/prepared-query.ts';
import type { Principal } from './principal.ts';
import { authenticateApiKey } from './api-key-auth.ts';
import type { VerifiedToken } from './tokens.ts';

/** What authenticating needs: the database and the token service. */
export interface AuthContext extends BaseContext {
  tokens: TokenService;
}

/** The credential a request carries, read from its headers (REST and WebSocket alike). */
export type Credential = { type: 'bearer'; token: string } | { type: 'api_key'; key: string };

/** Reads exactly one credential from the headers; two at once is ambiguous and refused. */
export function credentialFromHeaders(headers: IncomingHttpHeaders): Credential | undefined {
  const authorization = headers.authorization;
  const apiKey = headers['x-api-key'];
  if (authorization !== undefined && apiKey !== undefined) {
    throw new ServiceError('unauthorized', 'Send one credential: Authorization or X-API-Key, not both.');
  }
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw new ServiceError('unauthorized', 'Authorization must be "Bearer <token>".');
    return { type: 'bearer', token: match[1]! };
  }
  if (typeof apiKey === 'string') return { type: 'api_key', key: apiKey.trim() };
  return undefined;
}

interface AccountRow {
  id: string;
  kind: 'human' | 'service';
}

async function loadAccount(ctx: AuthContext, id: string): Promise<AccountRow | undefined> {
  // Named: every bearer request and every WebSocket frame runs it.
  const { rows } = await preparedQuery<AccountRow>(
    ctx.db,
    'cp_account',
    'SELECT id, kind FROM users WHERE id = $1::uuid',
    [id],
  );
  return rows[0];
}

/**
 * Turns a credential into a principal, or throws 401. Accounts are read on every request so a
 * deleted user's or retired service account's tokens stop working at once.
 */
export async function authenticate(ctx: AuthContext, credential: Credential | undefined): Promise<Principal> {
  if (!credential) throw new ServiceError('unauthorized', 'A credential is required.');
  if (credential.type === 'api_key') return authenticateApiKey(ctx, credential.key);
  return principalOf(ctx, await ctx.tokens.verify(credential.token));
}

/**
 * `authenticate` for a credential presented again and again: a WebSocket's, once per frame. A
 * bearer token is a fixed string, so its signature and claims are verified once; afterwards only
 * its expiry is checked, as jose checks it (refused once `exp` is at or before the current
 * second), and an expired token is verified again so it is refused with the same error. The
 * account is still read on every call and an API key looked up every time, so a deleted account,
 * a retired service account or a revoked key stops at the next frame.
 */
export function credentialAuthenticator(ctx: AuthContext, credential: Credential): () => Promise<Principal> {
  if (credential.type !== 'bearer') return () => authenticate(ctx, credential);
  let verified: Promise<VerifiedToken> | undefined;
  return async () => {
    let token: VerifiedToken;
    try {
      token = await (verified ??= ctx.tokens.verify(credential.token));
    } catch (error) {
      verified = undefined;
      throw error;
    }
    if (token.exp <= Math.floor(Date.now() / 1000)) {
      verified = undefined;
      token = await ctx.tokens.verify(credential.token);
    }
    return principalOf(ctx, token);
  };
}

/** The principal of a verified token, if its account still stands behind it. */
async function principalOf(ctx: AuthContext, token: VerifiedToken): Promise<Principal> {
  const account = await loadAccount(ctx, token.sub);
  if (!account) throw new ServiceError('unauthorized', 'The account no longer exists.');
  if (token.kind === 'access') {
    if (account.kind !== 'human') throw new ServiceError('unauthorized');
    return { userId: account.id, kind: 'human', credential: 'bearer', humanId: account.id };
  }
  // Acting token: valid only while its subject is still a service account owned by the minter,
  // directly or through service accounts it owns (a token minted while acting as one of them).
  const { rows } = await ctx.db.query<{ ok: boolean }>(
    `WITH RECURSIVE up(id, owner_id, depth) AS (
       SELECT id, owner_id, 0 FROM users WHERE id = $1::uuid AND kind = 'service'
       UNION ALL
       SELECT u.id, u.owner_id, up.depth + 1 FROM users u JOIN up ON u.id = up.owner_id
        WHERE u.kind = 'service' AND up.depth < 32
     )
     SELECT true AS ok FROM up WHERE owner_id = $2::uuid LIMIT 1`,
    [account.id, token.actor],
  );
  if (rows.length === 0) throw new ServiceError('unauthorized', 'The acting token no longer applies.');
  return { userId: account.id, kind: 'service', credential: 'acting', humanId: token.actor! };
}
