import type { IncomingHttpHeaders } from 'node:http';
import { ServiceError } from '../../shared/errors.ts';
import { credentialFromHeaders, type Credential } from '../auth/authenticate.ts';

/** The sub-protocol names that carry a credential (docs/commands.md, "Credentials"). */
const BEARER_PROTOCOL = 'authorization.bearer.base64';
const API_KEY_PROTOCOL = 'x-api-key.base64';

const CARRIERS: Record<string, Credential['type']> = {
  [BEARER_PROTOCOL]: 'bearer',
  [API_KEY_PROTOCOL]: 'api_key',
};

/** The credential of an upgrade request and the sub-protocol to answer with (null: native header). */
export interface Handshake {
  credential: Credential;
  protocol: typeof BEARER_PROTOCOL | typeof API_KEY_PROTOCOL | null;
}

// Browsers allow no `=`, `+` or `/` in a sub-protocol, so clients send base64url without padding
// (docs/commands.md, "Credentials"); standard base64, padded or not, is accepted too. The two alphabets never mix.
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const UTF8 = new TextDecoder('utf-8', { fatal: true });

function decodeCredential(value: string): string {
  const unpadded = value.replace(/=+$/, '');
  const shaped =
    (BASE64URL.test(value) || BASE64.test(value)) &&
    unpadded.length % 4 !== 1 &&
    (unpadded.length === value.length || value.length % 4 === 0);
  let text: string | undefined;
  if (shaped) {
    try {
      text = UTF8.decode(Buffer.from(value, 'base64'));
    } catch {
      text = undefined;
    }
  }
  // A token or key is printable ASCII without spaces; anything else is not one, whatever it decodes to.
  if (text === undefined || !/^[\x21-\x7e]+$/.test(text)) {
    throw new ServiceError(
      'unauthorized',
      'The credential in Sec-WebSocket-Protocol is not base64 (base64url without padding, or standard base64).',
    );
  }
  return text;
}

/**
 * Reads the one credential of a WebSocket upgrade: a native `Authorization: Bearer` or
 * `X-API-Key` header, or a `Sec-WebSocket-Protocol` pair `authorization.bearer.base64, <b64>` /
 * `x-api-key.base64, <b64>` (marker first, credential second). Throws 401 `unauthorized` when
 * there is none, when there are two, and for any other sub-protocol offer: the credential
 * carriers are the only sub-protocols this endpoint speaks.
 */
export function readHandshake(headers: IncomingHttpHeaders): Handshake {
  const native = credentialFromHeaders(headers);
  const offer = headers['sec-websocket-protocol'];
  if (offer === undefined) {
    if (!native)
      throw new ServiceError(
        'unauthorized',
        'A credential is required: Authorization, X-API-Key, or a credential sub-protocol.',
      );
    return { credential: native, protocol: null };
  }
  const protocols = offer.split(',').map((p) => p.trim());
  const carrier =
    protocols.length === 2 && Object.hasOwn(CARRIERS, protocols[0]!) ? CARRIERS[protocols[0]!] : undefined;
  if (carrier === undefined) {
    throw new ServiceError(
      'unauthorized',
      `Sec-WebSocket-Protocol must be "${BEARER_PROTOCOL}, <token>" or "${API_KEY_PROTOCOL}, <key>".`,
    );
  }
  if (native) throw new ServiceError('unauthorized', 'Send one credential: a header or a sub-protocol, not both.');
  const secret = decodeCredential(protocols[1]!);
  return carrier === 'bearer'
    ? { credential: { type: 'bearer', token: secret }, protocol: BEARER_PROTOCOL }
    : { credential: { type: 'api_key', key: secret }, protocol: API_KEY_PROTOCOL };
}

/**
 * The ws server's `handleProtocols`. By the time it runs the upgrade hook has replaced the
 * offer with the chosen carrier's name alone, so the credential is never echoed (and standard
 * base64's `/` and `=`, which are not legal in a protocol token, never reach ws's parser).
 */
export function chooseProtocol(protocols: Set<string>): string | false {
  if (protocols.has(BEARER_PROTOCOL)) return BEARER_PROTOCOL;
  if (protocols.has(API_KEY_PROTOCOL)) return API_KEY_PROTOCOL;
  return false;
}
