import { ServiceError, type ErrorCode, type LimitObject } from '../errors.ts';
import { limitById } from './catalog.ts';
import type { LimitInForce } from './resolve.ts';
import { limitValueText } from './limit-text.ts';

/**
 * The codes a limit refusal answers with (docs/limits.md, "Refusals"). All carry the `limit` object;
 * `limit_exceeded` is the general one, the others name the kind of write or query refused.
 */
export type LimitRefusalCode = Extract<
  ErrorCode,
  | 'limit_exceeded'
  | 'invalid_blob_type'
  | 'session_object_too_large'
  | 'session_file_too_large'
  | 'thread_item_too_large'
  | 'too_many_files'
  | 'graph_element_too_large'
  | 'graph_mutation_too_large'
  | 'graph_traversal_limit_exceeded'
>;

/**
 * The limit object of a refusal: `{id, value}` with the value in force for the request, and
 * `held` for a quota (how many the holder held when the request arrived). `held` is required
 * for a quota and refused for any other kind, so a refusal cannot leave it out or invent it.
 */
export function limitObject(resolved: LimitInForce, held?: number): LimitObject {
  const limit = limitById(resolved.id);
  if (limit.kind === 'quota' && held === undefined) throw new Error(`the limit object of quota ${limit.id} needs held`);
  if (limit.kind !== 'quota' && held !== undefined)
    throw new Error(`${limit.id} is not a quota: its limit object has no held`);
  const value = resolved.value;
  const object: LimitObject = {
    id: resolved.id,
    value: Array.isArray(value) ? [...value] : (value as number | boolean | null),
  };
  if (held !== undefined) object.held = held;
  return object;
}

/**
 * A refusal by a limit: HTTP 400 with `code` and the limit object. The message names the limit
 * and its value so that a person reading a log or a `failure` route sees which one tripped.
 */
export function limitRefusal(
  code: LimitRefusalCode,
  resolved: LimitInForce,
  held?: number,
  message?: string,
): ServiceError {
  const limit = limitObject(resolved, held);
  const text =
    message ??
    (held === undefined
      ? `Limit ${limit.id} is ${limitValueText(resolved.value)}.`
      : `Limit ${limit.id} is ${limitValueText(resolved.value)} and ${held} are held.`);
  return new ServiceError(code, text, { limit });
}

/** The general refusal: `limit_exceeded` with the limit object (quotas pass `held`). */
export function limitExceeded(resolved: LimitInForce, held?: number): ServiceError {
  return limitRefusal('limit_exceeded', resolved, held);
}

/**
 * Create Blob of a type the organization has not enabled: `invalid_blob_type` carrying the
 * type's `<family>.enabled` entitlement (value `false`).
 */
export function entitlementRefusal(resolved: LimitInForce): ServiceError {
  if (!resolved.id.endsWith('.enabled')) throw new Error(`${resolved.id} is not an enabled entitlement`);
  return limitRefusal(
    'invalid_blob_type',
    resolved,
    undefined,
    `Blobs of this type are not enabled for this organization (${resolved.id} is ${limitValueText(resolved.value)}).`,
  );
}
