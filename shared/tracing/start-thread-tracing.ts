/**
 * Tracing in a runner's engine worker thread (runner/engine/engine-thread.ts), imported only when the
 * runner's tracing is on.
 *
 * Each engine thread has a tracer provider of its own, exporting its spans itself, rather than
 * sending span data to the main thread: a worker thread is a V8 isolate with its own instances of
 * every module, so the main thread's provider is out of its reach, and shipping spans across would
 * mean serializing them by hand into a second exporter. The cost is one exporter (one batch, one
 * connection) per thread, 1–4 per runner. No instrumentation runs here: the thread's pg queries
 * are step writes batched across many executions, which belong to no one execution's trace; the
 * spans are the interpreter's own (an execution span per turn, a span per node run), each given
 * its parent explicitly from the execution's stored traceparent.
 */
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { TracingSettings } from '../config.ts';
import { serviceResource, traceExporter } from './exporter.ts';
import { otelTracing } from './otel-tracing.ts';
import type { Tracing } from './tracing.ts';

/** A tracer for this thread; `settings.serviceName` is the process's, resolved by the runner. */
export function startThreadTracing(settings: TracingSettings & { serviceName: string }): Tracing {
  const provider = new BasicTracerProvider({
    resource: serviceResource(settings.serviceName),
    spanProcessors: [new BatchSpanProcessor(traceExporter(settings))],
  });
  return otelTracing(provider.getTracer('workspace-runner-engine'), () => provider.shutdown());
}
