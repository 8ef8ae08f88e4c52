import fastifyWebsocket from '@fastify/websocket';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ServiceError } from '../../shared/errors.ts';
import { authenticate } from '../auth/authenticate.ts';
import { COMMAND_MESSAGE_LIMIT, createCommandRegistry, COMMANDS, type CommandRegistry } from '../commands/registry.ts';
import { wsRefusal, type WsAdmission } from '../plugins/throttle.ts';
import type { HeavyWorkGate } from '../plugins/heavy-work.ts';
import { websocketConnections } from '../metrics.ts';
import { serveConnection } from './connection.ts';
import { z } from 'zod';
import { routeSchema } from '../openapi/route-schema.ts';
import { chooseProtocol, readHandshake, type Handshake } from './handshake.ts';

export interface WebsocketPluginOptions {
  /** The commands the socket answers; the app passes the registry its REST command route uses. */
  commands?: CommandRegistry;
  /** Connections per client address (control-plane/plugins/throttle.ts); unset: unbounded. */
  admission?: WsAdmission;
  /** Admission of large messages per account and address (control-plane/plugins/heavy-work.ts); unset: unbounded. */
  heavyWork?: HeavyWorkGate;
}

/**
 * The WebSocket JSON-RPC 2.0 endpoint: an upgrade on `GET /v1` (docs/commands.md, "WebSocket: connecting").
 *
 * The upgrade is authenticated before it is accepted; a missing or invalid credential answers
 * HTTP 401 with the failure envelope and no socket is opened. Registered without fastify-plugin,
 * so @fastify/websocket's hooks stay inside this plugin and never touch the REST routes.
 */
export async function websocketPlugin(app: FastifyInstance, options: WebsocketPluginOptions): Promise<void> {
  const ctx = app.ctx;
  const registry = options.commands ?? createCommandRegistry(COMMANDS);
  const handshakes = new WeakMap<FastifyRequest, Handshake>();

  // Runs before @fastify/websocket's own preClose (which closes without a code), so clients see 1001.
  app.addHook('preClose', async () => {
    for (const client of app.websocketServer.clients) client.close(1001, 'The server is shutting down.');
  });
  await app.register(fastifyWebsocket, {
    options: {
      // ws closes a bigger frame with 1009 before buffering it.
      maxPayload: COMMAND_MESSAGE_LIMIT,
      handleProtocols: chooseProtocol,
    },
    // Socket-level failures (an oversized or malformed frame, a reset) are already answered by
    // ws with the right close code; terminating here would cut that close frame off.
    errorHandler(error, socket, request) {
      request.log.debug({ err: error }, 'websocket error');
      if (socket.readyState === socket.OPEN) socket.terminate();
    },
  });

  app.route({
    method: 'GET',
    url: '/v1',
    // The default auth hook reads only native headers; this route authenticates the sub-protocol forms too.
    config: { public: true },
    schema: routeSchema({
      tags: ['WebSocket'],
      summary: 'The JSON-RPC 2.0 WebSocket (an upgrade)',
      description:
        'Send `Upgrade: websocket`. The credential goes in a header, or as the sub-protocol pair `authorization.bearer.base64` / `x-api-key.base64` + the base64url credential (docs/commands.md). The methods are in the OpenRPC document at /v1/openrpc.json. Without the upgrade the answer is 404 `not_found`.',
      responses: { 101: z.null().meta({ description: 'Switching Protocols: the socket speaks JSON-RPC 2.0.' }) },
      errors: ['not_found'],
    }),
    async onRequest(request, reply) {
      if (!request.ws) return;
      const handshake = readHandshake(request.headers);
      request.principal = await authenticate(ctx, handshake.credential);
      const admission = options.admission;
      if (admission) {
        if (!admission.admit(request)) {
          reply.header('retry-after', '5');
          throw wsRefusal();
        }
        // The connection's TCP socket is the upgrade request's: its close gives the slot back,
        // however the connection ends (or the upgrade fails).
        request.raw.socket.once('close', () => admission.release(request));
      }
      // The offer carried the credential; leave only the carrier's name for ws to answer with,
      // so the secret is neither echoed nor logged past this point.
      if (handshake.protocol !== null) request.raw.headers['sec-websocket-protocol'] = handshake.protocol;
      handshakes.set(request, handshake);
    },
    handler() {
      throw new ServiceError('not_found', 'GET /v1 is the WebSocket endpoint: send an Upgrade: websocket request.');
    },
    wsHandler(socket, request) {
      websocketConnections.inc();
      socket.once('close', () => websocketConnections.dec());
      const handshake = handshakes.get(request)!;
      handshakes.delete(request);
      serveConnection({
        ctx,
        registry,
        socket,
        credential: handshake.credential,
        principal: request.principal,
        address: request.ip,
        heavyWork: options.heavyWork ?? null,
        log: request.log,
      });
    },
  });
}
