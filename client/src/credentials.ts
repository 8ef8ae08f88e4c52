/**
 * The two credentials the API takes (docs/auth.md, docs/access.md), and how each travels: as a
 * header (REST everywhere; WebSocket from Node) or, for a browser's WebSocket, which cannot set
 * headers, as the sub-protocol pair `[carrier, base64url(credential)]` (docs/commands.md).
 */

/** A bearer token (access or acting), fixed or read afresh for every request and reconnect. */
export interface TokenCredential {
  token: string | (() => string | Promise<string>);
}

/** An API key (`wsk_…`). */
export interface ApiKeyCredential {
  apiKey: string;
}

export type Credential = TokenCredential | ApiKeyCredential;

/** How a WebSocket carries the credential: `subprotocol` works everywhere, `header` in Node only. */
export type SocketCredentialForm = 'subprotocol' | 'header';

/** The credential's current secret (a token provider is called). */
async function secretOf(credential: Credential): Promise<string> {
  if ('apiKey' in credential) return credential.apiKey;
  return typeof credential.token === 'function' ? await credential.token() : credential.token;
}

/** Whether a fresh secret can be had (a token provider), so a 4001 close is worth a reconnect. */
export function isRenewable(credential: Credential): boolean {
  return 'token' in credential && typeof credential.token === 'function';
}

/** The request header carrying the credential. */
export async function credentialHeaders(credential: Credential): Promise<Record<string, string>> {
  const secret = await secretOf(credential);
  return 'apiKey' in credential ? { 'x-api-key': secret } : { authorization: `Bearer ${secret}` };
}

/**
 * base64url without padding of the UTF-8 bytes: browsers allow no `=`, `+` or `/` in a
 * sub-protocol. Uses btoa, which Node and browsers both have.
 */
export function base64url(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

/** The sub-protocol pair: `authorization.bearer.base64` or `x-api-key.base64`, then the secret. */
export async function credentialProtocols(credential: Credential): Promise<string[]> {
  const secret = await secretOf(credential);
  return ['apiKey' in credential ? 'x-api-key.base64' : 'authorization.bearer.base64', base64url(secret)];
}
