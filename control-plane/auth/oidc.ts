import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { Config } from '../../shared/config.ts';
import { ServiceError } from '../../shared/errors.ts';

export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
}

/** Verifies identity-provider ID tokens (signature by JWKS, `iss`, `aud`, `exp`). */
export interface OidcVerifier {
  verify(idToken: string): Promise<OidcIdentity>;
}

/** The JWKS is fetched lazily and cached by jose, refetched when an unknown `kid` arrives. */
export function createOidcVerifier(oidc: Config['oidc']): OidcVerifier {
  const jwks = createRemoteJWKSet(new URL(oidc.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 });
  return {
    async verify(idToken) {
      if (!oidc.audience) throw new ServiceError('unauthorized', 'Identity-provider sign-in is not configured (OIDC_AUDIENCE).');
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(idToken, jwks, {
          issuer: oidc.issuer,
          audience: oidc.audience,
          algorithms: ['RS256', 'ES256'],
          requiredClaims: ['sub', 'exp'],
        }));
      } catch (error) {
        throw new ServiceError('unauthorized', 'The ID token could not be verified.', {}, { cause: error });
      }
      return {
        issuer: oidc.issuer,
        subject: payload.sub!,
        email: typeof payload.email === 'string' && payload.email_verified !== false ? payload.email : null,
        name: typeof payload.name === 'string' ? payload.name : null,
      };
    },
  };
}
