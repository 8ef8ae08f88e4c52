/**
 * The control plane's own metrics (docs/operations.md, "Metrics"), beside the process, pool and
 * queue metrics of shared/metrics.ts; served on the ops port at /metrics.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram } from 'prom-client';

const httpDuration = new Histogram({
  name: 'workspace_http_request_duration_seconds',
  help: 'REST requests by method, route pattern (unmatched for unknown paths) and status code.',
  labelNames: ['method', 'route', 'status_code'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

export const websocketConnections = new Gauge({
  name: 'workspace_websocket_connections',
  help: 'WebSocket connections open now.',
});

export const websocketCalls = new Counter({
  name: 'workspace_websocket_calls_total',
  help: 'JSON-RPC calls answered, by method (unknown for names no command has) and outcome (ok, error).',
  labelNames: ['method', 'outcome'],
});

/** Times every REST request; the WebSocket upgrade counts as GET /v1 until the socket opens. */
export function registerHttpMetrics(app: FastifyInstance): void {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    httpDuration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
}
