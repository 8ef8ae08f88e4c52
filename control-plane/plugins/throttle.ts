/**
 * Abuse throttles per client address (docs/operations.md, "Throttles"), kept in this control
 * plane's memory: with several control planes behind a balancer each counts on its own, so an
 * address gets at most N× the limit. Every refusal is 429 `rate_limited` with `Retry-After` and
 * the envelope.
 *
 * - Anonymous sign-up (`POST /v1/auth/anonymous`): @fastify/rate-limit, a fixed window per
 *   address.
 * - Failed credentials (401 answers: bad or expired access tokens, API keys, refresh tokens,
 *   WebSocket handshakes): counted per credential, on failures only; once a credential failed
 *   `authFailuresPerMinute` times in its window, requests presenting it are refused until the
 *   window ends. What fails is throttled, never what succeeds: a valid credential sent from the
 *   same address (a proxy, a NAT shared with whoever is failing) is not slowed.
 *   @fastify/rate-limit counts every request by a key known before the request is read, so this
 *   one is ours.
 * - Concurrent WebSocket connections per address: control-plane/ws/plugin.ts asks `wsAdmit`.
 *
 * Each setting 0 turns its throttle off. The client address is fastify's `request.ip`, the peer
 * of the connection: behind a reverse proxy that is the proxy, so throttle there instead.
 */
import { createHash } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../shared/config.ts';
import { ServiceError } from '../../shared/errors.ts';
import { RateWindows } from '../limits/rate-windows.ts';

const WINDOW_MS = 60_000;

function refusal(retryAfterSeconds: number, what: string): ServiceError {
  return new ServiceError('rate_limited', `Too many ${what} from this address; try again in ${retryAfterSeconds} s.`);
}

function credentialRefusal(retryAfterSeconds: number): ServiceError {
  return new ServiceError(
    'rate_limited',
    `This credential failed too many times; try again in ${retryAfterSeconds} s, or use a valid one.`,
  );
}

const isRefresh = (request: FastifyRequest) =>
  request.method === 'POST' && request.url.split('?')[0] === '/v1/auth/refresh';

/**
 * The digest of the credential a request presents (its `Authorization`, `X-API-Key`, WebSocket
 * sub-protocol, or the refresh token of `POST /v1/auth/refresh` once the body is read), which a
 * failure counts against; undefined when it presents none. A digest, so that no secret is kept.
 */
function credentialKey(request: FastifyRequest, withBody: boolean): string | undefined {
  const h = request.headers;
  const parts = [h.authorization, h['x-api-key'], h['sec-websocket-protocol']].map((v) =>
    Array.isArray(v) ? v.join(',') : (v ?? ''),
  );
  if (withBody && isRefresh(request)) {
    const body = request.body as { refresh_token?: unknown } | undefined;
    parts.push(typeof body?.refresh_token === 'string' ? body.refresh_token : '');
  }
  if (parts.every((p) => p === '')) return undefined;
  return createHash('sha256').update(parts.join('\n')).digest('base64url');
}

export interface WsAdmission {
  /** Takes a connection slot of the request's address; false when it has none left. */
  admit(request: FastifyRequest): boolean;
  /** Gives back the slot `admit` took. */
  release(request: FastifyRequest): void;
}

/** Registers the sign-up and failed-credential throttles; returns the WebSocket admission the ws plugin asks. */
export async function registerThrottles(app: FastifyInstance, settings: Config['throttle']): Promise<WsAdmission> {
  if (settings.signupsPerMinute > 0) {
    // Before the plugin, whose own onRoute hook reads the route's config.rateLimit.
    app.addHook('onRoute', (route) => {
      if (route.url === '/v1/auth/anonymous' && route.method === 'POST') {
        route.config = { ...route.config, rateLimit: { max: settings.signupsPerMinute, timeWindow: WINDOW_MS } };
      }
    });
    await app.register(rateLimit, {
      global: false,
      errorResponseBuilder: (_request, context) => refusal(Math.max(1, Math.ceil(context.ttl / 1000)), 'sign-ups'),
    });
  }

  if (settings.authFailuresPerMinute > 0) {
    // Failures per credential digest, in bounded memory (limits/rate-windows.ts).
    const failures = new RateWindows(settings.authFailuresPerMinute);
    const refuseFailing = (request: FastifyRequest, reply: FastifyReply, withBody: boolean) => {
      const key = credentialKey(request, withBody);
      const wait = key === undefined ? 0 : failures.blockedFor(key);
      if (wait === 0) return;
      reply.header('retry-after', String(wait));
      throw credentialRefusal(wait);
    };
    // Headers before authentication (which runs on onRequest too, registered after this); a
    // refresh token once its body is read (the refresh route is public: nothing checked it yet).
    app.addHook('onRequest', async (request, reply) => {
      if (!isRefresh(request)) refuseFailing(request, reply, false);
    });
    app.addHook('preHandler', async (request, reply) => {
      if (isRefresh(request)) refuseFailing(request, reply, true);
    });
    app.addHook('onResponse', async (request, reply) => {
      if (reply.statusCode !== 401) return;
      const key = credentialKey(request, true);
      // Past the bound nothing more is counted: the credential is refused until its window ends.
      if (key !== undefined) failures.take(key);
    });
  }

  const open = new Map<string, number>();
  const max = settings.wsConnectionsPerAddress;
  return {
    admit(request) {
      if (max === 0) return true;
      const held = open.get(request.ip) ?? 0;
      if (held >= max) return false;
      open.set(request.ip, held + 1);
      return true;
    },
    release(request) {
      if (max === 0) return;
      const held = (open.get(request.ip) ?? 1) - 1;
      if (held <= 0) open.delete(request.ip);
      else open.set(request.ip, held);
    },
  };
}

/** The refusal of a WebSocket upgrade past the address's connections (429, Retry-After 5). */
export function wsRefusal(): ServiceError {
  return refusal(5, 'open WebSocket connections');
}
