import type { FastifySchema } from 'fastify';
import { z } from 'zod';
import { errorCatalog, type ErrorCode } from '../../shared/errors.ts';
import { IDEMPOTENCY_KEY_PATTERN } from '../idempotency/idempotency-key.ts';

/**
 * What a route declares to fastify for the OpenAPI document (docs/api.md): the same zod schemas
 * the handler parses with `parseInput`, its success answers and the error codes it may answer.
 * The handler keeps validating (so codes, messages and the order of checks stay as they are);
 * the declaration is documentation, and the response check of tests (response-check.ts).
 */
export interface RouteDoc {
  /** Groups the operation in the reference (one tag per concept page). */
  tags: readonly string[];
  summary: string;
  description?: string;
  params?: z.ZodType;
  querystring?: z.ZodType;
  body?: z.ZodType;
  headers?: z.ZodType;
  /** The body's content types when it is not JSON (binary uploads). */
  consumes?: readonly string[];
  /** Success answers by status, each a `success(...)` schema or a `binary(...)` response. */
  responses: Record<number, z.ZodType | BinaryResponse>;
  /** Error codes this route answers beyond the ones every route may (see `COMMON_ERRORS`). */
  errors?: readonly ErrorCode[];
  /** No credentials needed: `security: []` and no 401. */
  public?: boolean;
  /** A creating route that takes an `Idempotency-Key` header (control-plane/idempotency/). */
  idempotent?: boolean;
}

/** The `Idempotency-Key` header of creating routes and commands (docs/api.md, control-plane/idempotency/idempotency-key.ts). */
export const IDEMPOTENCY_KEY_DESCRIPTION =
  'Makes a retry safe: 1 to 255 visible ASCII characters, scoped to the caller. The same key and body within 24 hours answers the first answer again, byte for byte, with `Idempotent-Replayed: true`; the same key with another body or route is 409 `conflict`.';
const idempotencyHeaders = z.object({
  'idempotency-key': z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN)
    .optional()
    .meta({ description: IDEMPOTENCY_KEY_DESCRIPTION }),
});

/** A response whose body is not JSON (a download, an upgrade): its content types and, for downloads, the `X-Response-Body` envelope. */
export interface BinaryResponse {
  description: string;
  content: Record<string, { schema: z.ZodType }>;
}

/** A limit's value: a number, a flag, a module list (entitlements), or null (unlimited). */
export const limitValueSchema = z.union([z.number(), z.boolean(), z.array(z.string()), z.null()]);

/** The `limit` object of refusals (shared/errors.ts LimitObject). */
export const limitObjectSchema = z
  .object({
    id: z.string(),
    value: limitValueSchema,
    held: z.number().optional(),
  })
  .meta({
    id: 'LimitObject',
    description:
      'The limit that refused the request: its id, the value in force and, for quotas, how many the holder holds.',
  });

/**
 * The failure envelope with `error` narrowed to `codes` (all of one HTTP status). Strict, so a
 * field the envelope does not document fails the test-time response check.
 */
export function failure(codes: readonly ErrorCode[]): z.ZodType {
  const key = [...codes].sort().join(' ');
  let schema = failures.get(key);
  if (schema !== undefined) return schema;
  schema = z
    .strictObject({
      status: z.literal('failure'),
      error: z.enum(codes as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      limit: limitObjectSchema.optional(),
      errors: z.array(z.unknown()).optional().meta({ description: 'invalid_definition: every problem found.' }),
    })
    .meta({ description: codes.map((code) => `\`${code}\`: ${errorCatalog[code].message}`).join(' ') });
  // Every code of a status (the command routes' refusals): one component, referenced, not repeated.
  const status = errorCatalog[codes[0]!].status;
  const all = Object.entries(errorCatalog)
    .filter(([, entry]) => entry.status === status)
    .map(([code]) => code)
    .sort()
    .join(' ');
  if (key === all) schema = schema.meta({ id: `Failure${status}` });
  failures.set(key, schema);
  return schema;
}

const failures = new Map<string, z.ZodType>();

/** A download: the bytes under `contentType`, the envelope in `X-Response-Body` (described). */
export function binary(description: string, contentType = 'application/octet-stream'): BinaryResponse {
  return { description, content: { [contentType]: { schema: z.string().meta({ format: 'binary' }) } } };
}

/** The success envelope: `status: "success"` beside the route's own fields (control-plane/reply.ts `ok`). */
export function success<S extends z.ZodRawShape>(shape: S, description: string) {
  return z.strictObject({ status: z.literal('success'), ...shape }).meta({ description });
}

/** Every route may answer these: a malformed body or path, throttling, a failure of ours, the database away. */
const COMMON_ERRORS: readonly ErrorCode[] = ['invalid_request_body', 'rate_limited', 'internal_error', 'unavailable'];

/** Groups codes by their HTTP status, each group one failure schema. */
function errorResponses(codes: Iterable<ErrorCode>): Record<number, z.ZodType> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = errorCatalog[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, group]) => [status, failure(group.sort())]),
  );
}

/** Credentials a route needs (the security schemes of document.ts). */
const SECURITY = [{ bearer: [] }, { apiKey: [] }];

/** The fastify `schema` of a route: what @fastify/swagger documents and the test-time check validates against. */
export function routeSchema(doc: RouteDoc): FastifySchema {
  const errors: ErrorCode[] = [...COMMON_ERRORS, ...(doc.errors ?? [])];
  if (!doc.public) errors.push('unauthorized');
  if (doc.body !== undefined) errors.push('payload_too_large');
  if (doc.idempotent) errors.push('conflict');
  const schema: Record<string, unknown> = {
    tags: doc.tags,
    summary: doc.summary,
    security: doc.public ? [] : SECURITY,
    // A route's own answer for a status wins (GET /readyz's 503 is not the failure envelope).
    response: { ...errorResponses(errors), ...doc.responses },
  };
  if (doc.description !== undefined) schema.description = doc.description;
  if (doc.consumes !== undefined) schema.consumes = doc.consumes;
  for (const part of ['params', 'querystring', 'body', 'headers'] as const) {
    if (doc[part] !== undefined) schema[part] = doc[part];
  }
  if (doc.idempotent)
    schema.headers =
      doc.headers === undefined ? idempotencyHeaders : (doc.headers as z.ZodObject).extend(idempotencyHeaders.shape);
  return schema as FastifySchema;
}
