/**
 * The control plane's own metrics (docs/operations.md, "Metrics"), beside the process, pool and
 * queue metrics of shared/metrics.ts; served on the ops port at /metrics.
 */
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram } from 'prom-client';

const httpDuration = new Histogram({
  name: 'workspace_http_request_duration_seconds',
  help: 'REST requests by method, route pattern (unmatched for unknown paths; the command route by command name) and status code.',
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

/** The command route, labelled per command: `/v1/revisions/:revision_id/create_execution`. */
const COMMAND_ROUTE = '/v1/revisions/:revision_id/:command';
const UNKNOWN_COMMAND = '/v1/revisions/:revision_id/:unknown_command';

/**
 * Times every REST request; the WebSocket upgrade counts as GET /v1 until the socket opens. The
 * command route is labelled with the command's name when it is one of `commandNames` (a fixed
 * set), and with one label for every other name, so a caller cannot grow the label set.
 */
export function registerHttpMetrics(app: FastifyInstance, commandNames: ReadonlySet<string>): void {
  app.addHook('onResponse', async (request, reply) => {
    let route = request.routeOptions.url ?? 'unmatched';
    if (route === COMMAND_ROUTE) {
      const command = (request.params as { command?: string } | undefined)?.command;
      route =
        command !== undefined && commandNames.has(command) ? `/v1/revisions/:revision_id/${command}` : UNKNOWN_COMMAND;
    }
    httpDuration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
}
