/**
 * Idempotency keys (docs/api.md, "Safe retries"): the one place the client attaches them. Every
 * create carries a fresh random UUID, and the client's own retries of that create (a 503, a
 * dropped connection, a reconnect) resend the same key, so a create that ran before its answer
 * was lost is not run twice: the service answers the retry with the first answer.
 *
 * REST: the `Idempotency-Key` header on the creating routes and on creating commands sent to
 * `POST /v1/revisions/{revision_id}/{command}`. JSON-RPC: the `idempotency_key` param of the
 * creating commands (`RpcOptions.idempotencyParam`, on by default; a service from before the
 * keys refuses the param as unknown, so turn it off against one).
 */

import type { CreatingCommandName } from './commands.ts';

/** REST routes (method and OpenAPI path template) that create a resource. */
export const CREATING_ROUTES: ReadonlySet<string> = new Set([
  'POST /v1/orgs',
  'POST /v1/blobs/{org_id}',
  'POST /v1/blobs/{org_id}/{blob_id}/revisions',
  'POST /v1/users',
  'POST /v1/api-keys',
  'POST /v1/credentials',
]);

/** Commands that create something (over REST and JSON-RPC). */
export const CREATING_COMMANDS: ReadonlySet<string> = new Set<CreatingCommandName>([
  'create_session',
  'create_definition',
  'create_execution',
  'create_schedule',
  'post_session_thread_item',
  'upload_records',
]);

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

/** Whether a REST request creates: a creating route, or a creating command on the command route. */
export function isCreatingRequest(method: string, schemaPath: string, url: string): boolean {
  if (CREATING_ROUTES.has(`${method.toUpperCase()} ${schemaPath}`)) return true;
  if (method.toUpperCase() !== 'POST') return false;
  const command = /\/v1\/revisions\/[^/]+\/([a-z_]+)$/.exec(new URL(url).pathname)?.[1];
  return command !== undefined && CREATING_COMMANDS.has(command);
}

/** The params of a JSON-RPC create, with a key added unless the caller gave one. */
export function withIdempotencyParam(method: string, params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!CREATING_COMMANDS.has(method)) return params;
  if (params && IDEMPOTENCY_PARAM in params) return params;
  return { ...params, [IDEMPOTENCY_PARAM]: newIdempotencyKey() };
}
