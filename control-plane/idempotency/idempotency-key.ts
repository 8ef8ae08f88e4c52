import { createHmac, hkdfSync } from 'node:crypto';
import { ServiceError } from '../../shared/errors.ts';
import { canonicalJson } from '../../shared/canonical-json.ts';
import type { Principal } from '../auth/principal.ts';

/** The REST header that carries a key (lower case, as Node presents headers). */
export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** The JSON-RPC param that carries a key, accepted by creating commands only. */
export const IDEMPOTENCY_PARAM = 'idempotency_key';

// Visible ASCII only: a header is Latin-1 on the wire and trimmed of spaces, a JSON-RPC param is
// UTF-8 text, so only this alphabet reads the same on both transports. UUIDs, ULIDs and base64
// all fit.
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** A key as JSON Schema, for the API documents (the header in OpenAPI, the param in OpenRPC). */
export const IDEMPOTENCY_KEY_JSON_SCHEMA = { type: 'string', pattern: IDEMPOTENCY_KEY_PATTERN.source } as const;

/** Where a key came from, for the refusal's wording. */
type KeySource = 'header' | 'param';

/** A key as the client sent it, not yet checked. */
export interface RawIdempotencyKey {
  value: unknown;
  source: KeySource;
}

/**
 * The key, or 400 `invalid_request_body` when it is not 1-255 characters of visible ASCII
 * (empty, too long, a space or control character, anything non-ASCII, not a string).
 */
export function checkedKey(raw: RawIdempotencyKey): string {
  const { value, source } = raw;
  if (typeof value === 'string' && IDEMPOTENCY_KEY_PATTERN.test(value)) return value;
  const where = source === 'header' ? 'Invalid Idempotency-Key header' : `Invalid params: ${IDEMPOTENCY_PARAM}`;
  throw new ServiceError(
    'invalid_request_body',
    `${where}: an idempotency key is 1 to 255 visible ASCII characters (no spaces or control characters).`,
  );
}

/**
 * Whose key it is. A bearer token's keys are its user's, so a retry after a token refresh still
 * finds them; an acting token's are the service account's as acted by that human; an API key's
 * are that key's alone (two keys of one account, perhaps confined to different targets, never
 * see each other's). The user id is in every form, so no two accounts share a scope.
 */
export function callerScope(principal: Principal): string {
  switch (principal.credential) {
    case 'bearer':
      return `user:${principal.userId}`;
    case 'acting':
      return `acting:${principal.userId}:${principal.humanId ?? ''}`;
    case 'api_key':
      return `key:${principal.userId}:${principal.key?.id ?? ''}`;
  }
}

// The info string separates this key from the credential cipher's, derived from the same secret.
const FINGERPRINT_INFO = 'workspace-service/idempotency/hmac-sha256/v1';

/**
 * What "the same request" means: an HMAC-SHA256 of the operation (`POST /v1/orgs`,
 * `create_execution`), its target (path params, the revision) and the parsed input. Keyed with a
 * secret derived from CREDENTIAL_KEY, because a stored fingerprint of `POST /v1/credentials`
 * covers the credential's secret and a bare hash of it could be guessed at.
 */
export function fingerprint(credentialKey: string, operation: string, input: unknown): Buffer {
  return createHmac('sha256', fingerprintSecret(credentialKey))
    .update(operation)
    .update('\n')
    .update(canonicalJson(input))
    .digest();
}

// Derived once per CREDENTIAL_KEY (one per process): HKDF on every keyed request was work for nothing.
let derived: { from: string; secret: Buffer } | undefined;
function fingerprintSecret(credentialKey: string): Buffer {
  if (derived?.from !== credentialKey) {
    derived = {
      from: credentialKey,
      secret: Buffer.from(hkdfSync('sha256', credentialKey, Buffer.alloc(0), FINGERPRINT_INFO, 32)),
    };
  }
  return derived.secret;
}
