/**
 * Starts OpenTelemetry in a process's main thread (control plane, runner): the NodeSDK with the
 * OTLP/HTTP exporter, the http and pg instrumentations, and @fastify/otel for the REST app.
 * Imported only by `loadTracing` (load-tracing.ts) when OTEL_EXPORTER_OTLP_ENDPOINT is set.
 *
 * Why the modules are required again below: the processes are ES modules whose imports (pg,
 * node:http) are all loaded before the entry's first statement runs, so the SDK starts after them.
 * Its instrumentations hook `require` (require-in-the-middle) and patch a module when it is
 * required; requiring `node:http`, `pg` and `pg-pool` once more after the start patches the very
 * objects our imports hold (Node keeps one instance of each: the ESM import of a CommonJS package
 * is its `require.cache` entry), and both patch prototypes (`Server.prototype.emit`,
 * `Client.prototype.query`, `Pool.prototype.connect`), which every pool and server made before or
 * after shares. This avoids a `--import` loader flag on every way the processes are started
 * (npm scripts, the supervisor, the Dockerfile, systemd units). fastify needs no patching:
 * @fastify/otel is a plugin that buildApp registers before any route.
 */
import { createRequire } from 'node:module';
import { trace } from '@opentelemetry/api';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import FastifyOtel from '@fastify/otel';
import type { FastifyPluginCallback } from 'fastify';
import type { TracingSettings } from '../config.ts';
import { serviceResource, traceExporter } from './exporter.ts';
import { otelTracing } from './otel-tracing.ts';
import type { ProcessTracing } from './tracing.ts';

/** Paths that answer probes and scrapes: polled every few seconds, not worth a trace each. */
const QUIET_PATHS = /^\/(healthz|readyz|metrics)(\?|$)/;

/** Whether `fn` was wrapped by an instrumentation (shimmer marks wrappers with `__wrapped`). */
function wrapped(fn: unknown): boolean {
  return typeof fn === 'function' && (fn as { __wrapped?: boolean }).__wrapped === true;
}

/** Starts the SDK for this process, with `serviceName` unless OTEL_SERVICE_NAME names another. */
export async function startTracing(settings: TracingSettings, serviceName: string): Promise<ProcessTracing> {
  const fastify = new FastifyOtel.FastifyOtelInstrumentation({
    registerOnInitialization: false,
    // One span per request and one for its handler; a span per hook (auth, audit, metrics…) is noise.
    instrumentHooks: false,
    ignorePaths: (route) => QUIET_PATHS.test(route.url),
  });
  const sdk = new NodeSDK({
    resource: serviceResource(settings.serviceName ?? serviceName),
    traceExporter: traceExporter(settings),
    // Metrics stay Prometheus (shared/metrics.ts) and logs stay pino's: without these the SDK
    // would also export both over OTLP.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) => QUIET_PATHS.test(request.url ?? ''),
        // Outgoing calls (identity-provider keys, S3) only inside a traced request.
        requireParentforOutgoingSpans: true,
      }),
      // Only queries made inside a span (a request, a fire): pg-boss's polls, lease renewals and
      // sweeps would otherwise each start a trace of their own, several a second.
      // Parameters are never recorded (enhancedDatabaseReporting stays off): they hold user data.
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      fastify,
    ],
  });
  sdk.start();
  const require = createRequire(import.meta.url);
  const http = require('node:http') as typeof import('node:http');
  require('node:https');
  const pg = require('pg') as typeof import('pg');
  require('pg-pool');
  const tracing = otelTracing(trace.getTracer('workspace-service'), () => sdk.shutdown());
  return {
    tracing,
    fastifyPlugin: fastify.plugin() as FastifyPluginCallback,
    instrumented: { http: wrapped(http.Server.prototype.emit), pg: wrapped(pg.Client.prototype.query) },
  };
}
