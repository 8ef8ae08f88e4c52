/**
 * A JSON body as the API accepts it (docs/api.md, "Conventions": JSON bodies), from its bytes: UTF-8, not
 * empty, JSON without prototype-poisoning keys (secure-json-parse, as fastify's own parser), not
 * `null`, and within the bounds of shared/json-guard.ts (depth, storable text). One function for
 * the event loop (small bodies) and the body threads (large ones), so both refuse alike.
 */
import { isUtf8 } from 'node:buffer';
import secureJson from 'secure-json-parse';
import { jsonProblem } from '../../shared/json-guard.ts';

const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const;

/** The parsed body, or the message of its `invalid_request_body` refusal. */
export type GuardedJson = { value: unknown } | { refusal: string };

/** Reads `bytes` as a JSON body; never throws. */
export function guardedJson(bytes: Uint8Array): GuardedJson {
  if (!isUtf8(bytes)) return { refusal: 'The body is not valid UTF-8.' };
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (text.length === 0) return { refusal: 'The JSON body is empty.' };
  let value: unknown;
  try {
    value = secureJson.parse(text, null, PARSE_OPTIONS);
  } catch {
    return { refusal: 'The body is not valid JSON.' };
  }
  if (value === null) return { refusal: 'The body is JSON null; send an object.' };
  const problem = jsonProblem(value);
  if (problem !== null) return { refusal: `Invalid body: ${problem}.` };
  return { value };
}
