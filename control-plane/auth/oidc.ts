import { createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { Config } from '../../shared/config.ts';
import { ServiceError } from '../../shared/errors.ts';

interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  name: string | null;
}

/** Verifies identity-provider ID tokens (signature by JWKS, `iss`, `aud`, `exp`). */
export interface OidcVerifier {
  verify(idToken: string): Promise<OidcIdentity>;
}

const GOOGLE_ISSUER = 'https://accounts.google.com';

/**
 * The `iss` values accepted for the configured issuer. Google documents that its ID tokens carry
 * either `https://accounts.google.com` or `accounts.google.com`; both name the same provider, and
 * users are keyed by the configured form so the two never split one person into two accounts.
 */
function acceptedIssuers(issuer: string): string[] {
  return issuer === GOOGLE_ISSUER ? [GOOGLE_ISSUER, 'accounts.google.com'] : [issuer];
}

/**
 * A failure to obtain the provider's keys (unreachable, timeout, not 200, not a key set) is the
 * service's problem, not the caller's: it answers 500 so a client does not discard a good token.
 * jose throws the bare `JOSEError` class for a bad HTTP status or body, and a plain `TypeError`
 * when fetch itself fails.
 */
function isKeyFetchFailure(error: unknown): boolean {
  if (!(error instanceof errors.JOSEError)) return true;
  return (
    error instanceof errors.JWKSTimeout ||
    error instanceof errors.JWKSInvalid ||
    Object.getPrototypeOf(error) === errors.JOSEError.prototype
  );
}

/** Google has sent `email_verified` both as a boolean and as the string "false". */
function verifiedEmail(payload: JWTPayload): string | null {
  if (typeof payload.email !== 'string' || payload.email === '') return null;
  return payload.email_verified === false || payload.email_verified === 'false' ? null : payload.email;
}

/**
 * The JWKS is fetched lazily on the first sign-in and cached by jose (10 minutes), and refetched
 * early when a token names an unknown `kid` (at most every 30 seconds), so key rotation at the
 * provider needs no restart. Only asymmetric algorithms are accepted: an HMAC token "signed" with
 * the provider's public key is refused before any key is looked up.
 */
export function createOidcVerifier(oidc: Config['oidc']): OidcVerifier {
  const jwks = createRemoteJWKSet(new URL(oidc.jwksUrl), { timeoutDuration: 5000, cooldownDuration: 30_000 });
  const issuers = acceptedIssuers(oidc.issuer);
  return {
    async verify(idToken) {
      if (!oidc.audience)
        throw new ServiceError('unauthorized', 'Identity-provider sign-in is not configured (OIDC_AUDIENCE).');
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(idToken, jwks, {
          issuer: issuers,
          audience: oidc.audience,
          algorithms: ['RS256', 'ES256'],
          requiredClaims: ['sub', 'exp'],
        }));
      } catch (error) {
        if (isKeyFetchFailure(error)) {
          throw new ServiceError(
            'internal_error',
            "The identity provider's signing keys could not be fetched.",
            {},
            { cause: error },
          );
        }
        throw new ServiceError('unauthorized', 'The ID token could not be verified.', {}, { cause: error });
      }
      if (typeof payload.sub !== 'string' || payload.sub === '' || payload.sub.length > 255) {
        throw new ServiceError('unauthorized', 'The ID token has no usable subject.');
      }
      return {
        issuer: oidc.issuer,
        subject: payload.sub,
        email: verifiedEmail(payload),
        name: typeof payload.name === 'string' ? payload.name.slice(0, 200) : null,
      };
    },
  };
}
