/**
 * Abuse throttles per client address (docs/operations.md, "Throttles"), kept in this control
 * plane's memory: with several control planes behind a balancer each counts on its own, so an
 * address gets at most N× the limit. Every refusal is 429 `rate_limited` with `Retry-After` and
 * the envelope.
 *
 * - Anonymous sign-up (`POST /v1/auth/anonymous`): @fastify/rate-limit, a fixed window per
 *   address.
 * - Failed credentials (401 answers: bad or expired access tokens, API keys, refresh tokens,
 *   WebSocket handshakes): counted on failures only, so an honest busy client is never slowed;
 *   once an address failed `authFailuresPerMinute` times in its window, its requests that carry
 *   a credential are refused until the window ends. @fastify/rate-limit counts every request, so
 *   this one is ours.
 * - Concurrent WebSocket connections per address: control-plane/ws/plugin.ts asks `wsAdmit`.
 *
 * Each setting 0 turns its throttle off. The client address is fastify's `request.ip`, the peer
 * of the connection: behind a reverse proxy that is the proxy, so throttle there instead.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../shared/config.ts';
import { ServiceError } from '../../shared/errors.ts';

const WINDOW_MS = 60_000;
/** Addresses remembered per counter; the oldest are forgotten first (a flood of addresses costs bounded memory). */
const MAX_ADDRESSES = 100_000;

function refusal(retryAfterSeconds: number, what: string): ServiceError {
  return new ServiceError('rate_limited', `Too many ${what} from this address; try again in ${retryAfterSeconds} s.`);
}

/** Failures per address in fixed one-minute windows. */
class FailureWindows {
  readonly #max: number;
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(max: number) {
    this.#max = max;
  }

  /** Seconds until `address` may try again, or 0 when it may now. */
  blockedFor(address: string, now = Date.now()): number {
    const window = this.#windows.get(address);
    if (!window || window.count < this.#max || now - window.start >= WINDOW_MS) return 0;
    return Math.max(1, Math.ceil((window.start + WINDOW_MS - now) / 1000));
  }

  fail(address: string, now = Date.now()): void {
    let window = this.#windows.get(address);
    if (!window || now - window.start >= WINDOW_MS) window = { start: now, count: 0 };
    window.count++;
    // Re-inserted at the end: Map order is the eviction order.
    this.#windows.delete(address);
    this.#windows.set(address, window);
    if (this.#windows.size > MAX_ADDRESSES) this.#windows.delete(this.#windows.keys().next().value!);
  }
}

/** Whether a request presents a credential (or a refresh token) that a failure would count against. */
function carriesCredential(request: FastifyRequest): boolean {
  const h = request.headers;
  return (
    h.authorization !== undefined ||
    h['x-api-key'] !== undefined ||
    h['sec-websocket-protocol'] !== undefined ||
    (request.method === 'POST' && request.url.split('?')[0] === '/v1/auth/refresh')
  );
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
    const failures = new FailureWindows(settings.authFailuresPerMinute);
    app.addHook('onRequest', async (request, reply) => {
      if (!carriesCredential(request)) return;
      const wait = failures.blockedFor(request.ip);
      if (wait === 0) return;
      reply.header('retry-after', String(wait));
      throw refusal(wait, 'failed sign-ins');
    });
    app.addHook('onResponse', async (request, reply) => {
      if (reply.statusCode === 401) failures.fail(request.ip);
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
