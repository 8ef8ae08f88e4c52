import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * An API key is `wsk_<public id>_<secret>`: the fixed prefix lets secret scanners recognise a
 * leaked key, the public id (16 hex digits, shown in listings as `prefix`) finds its record
 * without an index on secrets, and the secret carries 256 bits of randomness. Only a SHA-256 of
 * the whole key is stored: with that much entropy a fast hash resists guessing, and no salt or
 * slow hash is needed.
 */
export const API_KEY_PREFIX = 'wsk_';

const KEY_RE = /^wsk_([0-9a-f]{16})_([A-Za-z0-9_-]{43})$/;

export interface NewApiKey {
  /** The whole key, shown once to the minter and never stored. */
  key: string;
  publicId: string;
  hash: Buffer;
}

function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Draws a fresh key. */
export function generateApiKey(): NewApiKey {
  const publicId = randomBytes(8).toString('hex');
  const key = `${API_KEY_PREFIX}${publicId}_${randomBytes(32).toString('base64url')}`;
  return { key, publicId, hash: hashApiKey(key) };
}

/** The public id of a well-formed key, or undefined. */
export function apiKeyPublicId(key: string): string | undefined {
  return KEY_RE.exec(key)?.[1];
}

/** Compares a presented key with a stored hash in constant time. */
export function apiKeyMatches(key: string, storedHash: Buffer): boolean {
  const presented = hashApiKey(key);
  return storedHash.length === presented.length && timingSafeEqual(presented, storedHash);
}
