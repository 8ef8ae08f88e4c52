/**
 * Tracing for an entry file (control-plane/main.ts, runner/main.ts): null while
 * OTEL_EXPORTER_OTLP_ENDPOINT is unset, and then nothing of the SDK is imported.
 */
import type { FastifyPluginCallback } from 'fastify';
import type { TracingSettings } from '../config.ts';
import type { Tracing } from './tracing.ts';

/** A process's tracing once started. */
export interface ProcessTracing {
  tracing: Tracing;
  /** @fastify/otel, for buildApp to register before its routes (a span per REST request). */
  fastifyPlugin: FastifyPluginCallback;
  /** Whether the already loaded modules were patched (start-tracing.ts); the entry warns if not. */
  instrumented: { http: boolean; pg: boolean };
}

/** Starts tracing for this process when `settings` says so (see start-tracing.ts). */
export async function loadTracing(settings: TracingSettings | null, serviceName: string): Promise<ProcessTracing | null> {
  if (settings === null) return null;
  const { startTracing } = await import('./start-tracing.ts');
  return startTracing(settings, serviceName);
}
