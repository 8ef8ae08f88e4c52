import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, exportSPKI, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import type { Test } from 'tap';

/** A stand-in identity provider: an RS256 key pair whose public half is served as a JWKS. */
export interface TestIdentityProvider {
  issuer: string;
  audience: string;
  jwksUrl: string;
  /** Environment for `buildTestApp` pointing the service at this provider. */
  env: Record<string, string>;
  /** How many times the JWKS was fetched. */
  readonly fetches: number;
  /** The public key as PEM (SPKI), for algorithm-confusion tests. */
  publicPem: string;
  /** Signs an ID token; `claims` override the defaults (iss, aud, sub, iat, exp in 10 minutes). */
  sign(claims?: JWTPayload, options?: SignOptions): Promise<string>;
}

interface SignOptions {
  /** Sign with this key instead of the provider's (an unknown key). */
  key?: CryptoKey;
  kid?: string;
}

const KID = 'test-key-1';

/** A fresh RS256 key pair, for tokens signed by a key the provider never published. */
export async function generateRsaKey(): Promise<CryptoKey> {
  const { privateKey } = await generateKeyPair('RS256');
  return privateKey;
}

/** Starts the provider on 127.0.0.1 (an ephemeral port); closed at the test's teardown. */
export async function startIdentityProvider(
  t: Test,
  options: { issuer?: string; audience?: string } = {},
): Promise<TestIdentityProvider> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid: KID, alg: 'RS256', use: 'sig' };
  let fetches = 0;
  const server: Server = createServer((request, response) => {
    if (request.url !== '/jwks') {
      response.writeHead(404).end();
      return;
    }
    fetches += 1;
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  const issuer = options.issuer ?? 'https://idp.test.example';
  const audience = options.audience ?? 'workspace-test-client';
  const jwksUrl = `http://127.0.0.1:${port}/jwks`;
  return {
    issuer,
    audience,
    jwksUrl,
    env: { OIDC_ISSUER: issuer, OIDC_JWKS_URL: jwksUrl, OIDC_AUDIENCE: audience },
    get fetches() {
      return fetches;
    },
    publicPem: await exportSPKI(publicKey),
    async sign(claims = {}, signOptions = {}) {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ iss: issuer, aud: audience, sub: 'subject-1', iat: now, exp: now + 600, ...claims })
        .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: signOptions.kid ?? KID })
        .sign(signOptions.key ?? privateKey);
    },
  };
}

/** An unsigned token (`alg: none`) with the given header fields and payload. */
export function unsignedToken(payload: Record<string, unknown>, header: Record<string, unknown> = {}): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${part({ alg: 'none', ...header })}.${part(payload)}.`;
}
