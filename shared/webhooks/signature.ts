/**
 * The signature scheme of webhooks in both directions (docs/webhooks.md, "Signatures"), that of
 * the Standard Webhooks specification, so a receiver or a sender can use any of its libraries:
 *
 * - the secret is `whsec_` followed by the base64 of 32 random bytes; the HMAC key is those bytes;
 * - three headers: `webhook-id` (the message's id, the same on every retry of it),
 *   `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64 signature>`, several
 *   separated by spaces while a secret changes);
 * - the signature is HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`, the body as sent
 *   (bytes, never a re-serialization).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const ID_HEADER = 'webhook-id';
const TIMESTAMP_HEADER = 'webhook-timestamp';
const SIGNATURE_HEADER = 'webhook-signature';

const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
/** A message older or newer than this is refused, whatever its signature (replays; clock skew). */
export const REPLAY_WINDOW_SECONDS = 5 * 60;
/** `webhook-id`: what a sender may choose (Standard Webhooks leaves it free); bounded for storage. */
const MESSAGE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** A new secret, as shown once to its creator. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The HMAC key of a secret: the bytes after `whsec_`. */
function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

function digest(secret: string, id: string, timestamp: string, body: Buffer | string): Buffer {
  return createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`).update(body).digest();
}

/** The three headers of a signed message. */
export function signedHeaders(
  secret: string,
  id: string,
  body: Buffer | string,
  now: Date = new Date(),
): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  return {
    [ID_HEADER]: id,
    [TIMESTAMP_HEADER]: timestamp,
    [SIGNATURE_HEADER]: `v1,${digest(secret, id, timestamp, body).toString('base64')}`,
  };
}

/** The headers of a received message, checked for shape and age but not yet for their signature. */
export interface ReceivedMessage {
  id: string;
  timestamp: string;
  /** Every `v1` signature the header lists, decoded. */
  signatures: Buffer[];
}

export type MessageProblem = 'missing' | 'malformed' | 'outside_window';

function header(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? undefined : value;
}

/**
 * Reads the three headers and checks the timestamp against the replay window, before anything is
 * looked up: a message missing one, malformed, or older (or newer) than five minutes is refused
 * without a query.
 */
export function readMessage(
  headers: Record<string, string | string[] | undefined>,
  nowMs: number = Date.now(),
): ReceivedMessage | MessageProblem {
  const id = header(headers, ID_HEADER);
  const timestamp = header(headers, TIMESTAMP_HEADER);
  const signature = header(headers, SIGNATURE_HEADER);
  if (id === undefined || timestamp === undefined || signature === undefined) return 'missing';
  if (!MESSAGE_ID.test(id) || !/^\d{1,12}$/.test(timestamp) || signature.length > 1024) return 'malformed';
  if (Math.abs(nowMs / 1000 - Number(timestamp)) > REPLAY_WINDOW_SECONDS) return 'outside_window';
  const signatures = signature
    .split(' ')
    .filter((part) => part.startsWith('v1,'))
    .map((part) => Buffer.from(part.slice(3), 'base64'));
  if (signatures.length === 0) return 'malformed';
  return { id, timestamp, signatures };
}

/**
 * Whether one of the message's signatures is the secret's over this body. Compared in constant
 * time (timingSafeEqual on equal lengths; a wrong length is not a secret).
 */
export function verifies(secret: string, message: ReceivedMessage, body: Buffer): boolean {
  const expected = digest(secret, message.id, message.timestamp, body);
  let ok = false;
  for (const given of message.signatures) {
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}
