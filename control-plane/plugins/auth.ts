import type { FastifyInstance } from 'fastify';
import { authenticate, credentialFromHeaders } from '../auth/authenticate.ts';

/**
 * Default-deny: every matched route authenticates unless it is marked `config: { public: true }`.
 * Unknown routes skip this so they answer 404 rather than 401.
 */
export function registerAuth(app: FastifyInstance): void {
  app.decorateRequest('principal', null as never);
  app.addHook('onRequest', async (request) => {
    if (request.is404 || request.routeOptions.config.public) return;
    request.principal = await authenticate(app.ctx, credentialFromHeaders(request.headers));
  });
}
