/**
 * Idempotency keys (docs/api.md, "Safe retries"): the one place the client attaches them. Every
 * create carries a fresh random UUID, and the client's own retries of that create (a 503, a
 * dropped connection, a reconnect) resend the same key, so a create that ran before its answer
 * was lost is not run twice: the service answers the retry with the first answer.
 *
 * Which operations create comes from the document (idempotent-operations.ts, generated: every
 * operation with an `Idempotency-Key` header), so a new creating route or command needs nothing
 * here. REST: the `Idempotency-Key` header on those operations. JSON-RPC: the `idempotency_key`
 * param of the creating commands (`RpcOptions.idempotencyParam`, on by default; a service from
 * before the keys refuses the param as unknown, so turn it off against one).
 */

import { IDEMPOTENT_OPERATIONS } from './idempotent-operations.ts';

const COMMAND_ROUTE = '/v1/revisions/{revision_id}/';

/** REST routes (`METHOD /path` as the OpenAPI document names them) that create a resource. */
export const CREATING_ROUTES: ReadonlySet<string> = new Set(
  IDEMPOTENT_OPERATIONS.filter((operation) => !operation.startsWith(`POST ${COMMAND_ROUTE}`)),
);

/** Commands that create something (over REST and JSON-RPC), from their paths in the document. */
export const CREATING_COMMANDS: ReadonlySet<string> = new Set(
  IDEMPOTENT_OPERATIONS.filter((operation) => operation.startsWith(`POST ${COMMAND_ROUTE}`)).map((operation) =>
    operation.slice(`POST ${COMMAND_ROUTE}`.length),
  ),
);

/** The header name on REST. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/** The param name over JSON-RPC. */
export const IDEMPOTENCY_PARAM = 'idempotency_key';

/** A fresh key: a random UUID (crypto.randomUUID, in Node and in browsers on secure origins). */
export function newIdempotencyKey(): string {
  const c = globalThis.crypto;
  if (typeof c?.randomUUID === 'function') return c.randomUUID();
  // Browsers offer randomUUID only on secure origins; getRandomValues everywhere.
  const bytes = c.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Whether a REST request creates: its operation takes an idempotency key. */
export function isCreatingRequest(method: string, schemaPath: string): boolean {
  return IDEMPOTENT_OPERATIONS.includes(`${method.toUpperCase()} ${schemaPath}`);
}

/** The params of a JSON-RPC create, with a key added unless the caller gave one. */
export function withIdempotencyParam(
  method: string,
  params: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (!CREATING_COMMANDS.has(method)) return params;
  if (params && IDEMPOTENCY_PARAM in params) return params;
  return { ...params, [IDEMPOTENCY_PARAM]: newIdempotencyKey() };
}
