import type { FastifyInstance, FastifyRequest } from 'fastify';
import { recordAuditEntry, type NewAuditEntry } from './audit-log.ts';

/** Names of the audited perimeter operations (docs/access.md, "The audit log (beyond the specification)"). */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- the list is the type's source
const PERIMETER_OPERATIONS = [
  'api_key.mint',
  'api_key.revoke',
  'credential.store',
  'credential.delete',
  'member.grant',
  'member.revoke',
  'account.create',
  'account.delete',
  'acting_token.mint',
  'org.visibility.change',
  'blob.visibility.change',
] as const;
type PerimeterOperation = (typeof PERIMETER_OPERATIONS)[number];

interface AuditTarget {
  type: string;
  id: string;
}

/** What a route tells the audit about the request it is serving. */
export interface AuditMark {
  /** Makes the request audited under this name (used where only some requests are, e.g. a visibility change). */
  operation?: string;
  /** The resolved target, preferred over what the route table reads from the raw request. */
  target?: AuditTarget;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Audit every request to this route under this operation name. */
    audit?: string;
  }
  interface FastifyRequest {
    /** Set through `markAudit`; null on requests no route marked. */
    auditMark: AuditMark | null;
  }
}

function str(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value.slice(0, 200) : null;
}

function field(request: FastifyRequest, from: 'body' | 'params', name: string): string | null {
  const source = request[from];
  return typeof source === 'object' && source !== null ? str((source as Record<string, unknown>)[name]) : null;
}

type TargetReader = (request: FastifyRequest) => { type: string | null; id: string | null };

const bodyTarget: TargetReader = (r) => ({ type: field(r, 'body', 'target'), id: field(r, 'body', 'target_id') });
const bodyId =
  (type: string): TargetReader =>
  (r) => ({ type, id: field(r, 'body', 'id') });
const bodyUser: TargetReader = (r) => ({ type: 'user', id: field(r, 'body', 'user_id') });
const paramUser: TargetReader = (r) => ({ type: 'user', id: field(r, 'params', 'user_id') });
const noTarget: TargetReader = () => ({ type: null, id: null });

/**
 * The perimeter routes, audited whatever their handler does, so the routes that serve them carry
 * no audit code. Targets are read from the raw request (an id or an alias, as sent); a handler
 * that has resolved the real target may name it with `markAudit`. The two PATCH routes are not
 * here: they are audited only when `visibility` changes (see access/visibility-change.ts).
 */
const PERIMETER_ROUTES: Record<string, { operation: PerimeterOperation; target: TargetReader }> = {
  'POST /v1/api-keys': { operation: 'api_key.mint', target: bodyTarget },
  'DELETE /v1/api-keys': { operation: 'api_key.revoke', target: bodyId('api_key') },
  'POST /v1/credentials': { operation: 'credential.store', target: bodyTarget },
  'DELETE /v1/credentials': { operation: 'credential.delete', target: bodyId('credential') },
  'POST /v1/members': { operation: 'member.grant', target: bodyTarget },
  'DELETE /v1/members': { operation: 'member.revoke', target: bodyTarget },
  'POST /v1/users': { operation: 'account.create', target: noTarget },
  'DELETE /v1/users/:user_id': { operation: 'account.delete', target: paramUser },
  'POST /v1/auth/core/impersonate': { operation: 'acting_token.mint', target: bodyUser },
};

/**
 * Tells the audit what this request is about: an operation name (which makes the request
 * audited) and/or its resolved target. Later calls merge over earlier ones.
 */
export function markAudit(request: FastifyRequest, mark: AuditMark): void {
  request.auditMark = { ...request.auditMark, ...mark };
}

function errorCode(payload: unknown): string | null {
  if (typeof payload !== 'string') return null;
  try {
    return str((JSON.parse(payload) as { error?: unknown }).error);
  } catch {
    return null;
  }
}

function entry(
  request: FastifyRequest,
  operation: string,
  route: string,
  target: { type: string | null; id: string | null },
  status: number,
  error: string | null,
): NewAuditEntry {
  const principal = request.principal;
  return {
    request_id: request.id,
    actor_id: principal.userId,
    human_id: principal.humanId,
    credential: principal.credential,
    api_key_id: principal.key?.id ?? null,
    operation,
    method: request.method,
    route,
    target_type: target.type,
    target_id: target.id,
    outcome: error === null ? 'allowed' : 'refused',
    error,
    status,
  };
}

/**
 * Records every perimeter operation and every request made with an acting token in `audit_log`,
 * allowed or refused. The entry is written in `onSend`, before the answer leaves, so a caller
 * that has its answer can find the entry. A failed write is logged, never turned into a failed
 * answer: the operation itself has already committed or been refused. Requests that did not
 * authenticate are not audited (there is no actor to record). A WebSocket upgrade never reaches
 * `onSend`; an accepted one made with an acting token is recorded when it is handed to the socket
 * (`websocket.connect`, status 101); the frames on it are not audited one by one.
 */
export function registerAudit(app: FastifyInstance): void {
  const write = async (request: FastifyRequest, row: NewAuditEntry): Promise<void> => {
    try {
      await recordAuditEntry(app.ctx.db, row);
    } catch (error) {
      request.log.error({ err: error, operation: row.operation }, 'audit entry not recorded');
    }
  };

  app.decorateRequest('auditMark', null);

  app.addHook('preHandler', async (request) => {
    if (!(request as { ws?: boolean }).ws || request.principal?.credential !== 'acting') return;
    await write(
      request,
      entry(request, 'websocket.connect', request.routeOptions.url ?? '/v1', { type: null, id: null }, 101, null),
    );
  });

  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.principal) return payload;
    const route = request.routeOptions.url ?? request.url.split('?')[0]!;
    const byRoute = PERIMETER_ROUTES[`${request.method} ${route}`];
    const mark = request.auditMark;
    const operation =
      mark?.operation ??
      request.routeOptions.config.audit ??
      byRoute?.operation ??
      (request.principal.credential === 'acting' ? `${request.method} ${route}` : null);
    if (operation === null) return payload;

    const target = mark?.target ?? byRoute?.target(request) ?? { type: null, id: null };
    const refused = reply.statusCode >= 400;
    await write(
      request,
      entry(request, operation, route, target, reply.statusCode, refused ? (errorCode(payload) ?? 'unknown') : null),
    );
    return payload;
  });
}
