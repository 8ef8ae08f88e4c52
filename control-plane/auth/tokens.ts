import { webcrypto } from 'node:crypto';
import { SignJWT, decodeProtectedHeader, jwtVerify } from 'jose';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';

const ISSUER = 'workspace-service';
const ALG = 'HS256';

/**
 * Token kinds are told apart by both the `typ` header and the audience, so a token of one kind
 * presented as another fails verification rather than relying on a claim check in a route.
 */
const KINDS = {
  access: { typ: 'at+jwt', audience: 'workspace-service:access' },
  acting: { typ: 'act+jwt', audience: 'workspace-service:acting' },
} as const;
type TokenKind = keyof typeof KINDS;

export const ACTING_TOKEN_SECONDS = 3600;

export interface VerifiedToken {
  kind: TokenKind;
  /** The account the token authenticates as. */
  sub: string;
  /** Acting tokens: the human who minted it. */
  actor?: string;
  /** Expiry, epoch seconds: the token is refused once this is at or before the current second. */
  exp: number;
}

export interface TokenService {
  signAccess(userId: string): Promise<string>;
  signActing(serviceAccountId: string, humanId: string): Promise<string>;
  /** Verifies an access or acting token; throws `unauthorized` on anything else. */
  verify(token: string): Promise<VerifiedToken>;
  readonly accessSeconds: number;
}

/** Signs and verifies the service's own JWTs with the algorithm pinned to HS256. */
export function createTokenService(signingKey: string, accessSeconds: number): TokenService {
  const raw = new TextEncoder().encode(signingKey);
  // Imported once: given the raw bytes, jose imports a WebCrypto key on every sign and verify,
  // which was a third of each verification's CPU.
  let imported: Promise<webcrypto.CryptoKey> | undefined;
  const keyOf = (): Promise<webcrypto.CryptoKey> =>
    (imported ??= webcrypto.subtle.importKey('raw', raw, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']));

  async function sign(
    kind: TokenKind,
    sub: string,
    seconds: number,
    claims: Record<string, unknown> = {},
  ): Promise<string> {
    return new SignJWT(claims)
      .setProtectedHeader({ alg: ALG, typ: KINDS[kind].typ })
      .setIssuer(ISSUER)
      .setAudience(KINDS[kind].audience)
      .setSubject(sub)
      .setIssuedAt()
      .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
      .sign(await keyOf());
  }

  async function verifyAs(kind: TokenKind, token: string): Promise<VerifiedToken> {
    const { payload } = await jwtVerify(token, await keyOf(), {
      algorithms: [ALG],
      issuer: ISSUER,
      audience: KINDS[kind].audience,
      typ: KINDS[kind].typ,
      requiredClaims: ['sub', 'exp', 'iat'],
    });
    // Subjects are looked up as uuid columns: a malformed one must be a 401 here, not a cast
    // error (500) in the query that loads the account.
    if (typeof payload.sub !== 'string' || !isUuid(payload.sub)) throw new ServiceError('unauthorized');
    if (kind === 'access') {
      if (payload.act !== undefined) throw new ServiceError('unauthorized');
      return { kind, sub: payload.sub, exp: payload.exp! };
    }
    const actor = (payload.act as { sub?: unknown } | null | undefined)?.sub;
    if (typeof actor !== 'string' || !isUuid(actor)) throw new ServiceError('unauthorized');
    return { kind, sub: payload.sub, actor, exp: payload.exp! };
  }

  return {
    accessSeconds,
    signAccess: (userId) => sign('access', userId, accessSeconds),
    signActing: (serviceAccountId, humanId) =>
      sign('acting', serviceAccountId, ACTING_TOKEN_SECONDS, { act: { sub: humanId } }),
    async verify(token) {
      let kind: TokenKind | undefined;
      try {
        const { typ } = decodeProtectedHeader(token);
        kind = (Object.keys(KINDS) as TokenKind[]).find((k) => KINDS[k].typ === typ);
      } catch {
        kind = undefined;
      }
      if (kind) {
        try {
          return await verifyAs(kind, token);
        } catch {
          // fall through: every verification failure is the same 401 to the caller
        }
      }
      throw new ServiceError('unauthorized', 'The token is invalid or expired.');
    },
  };
}
