/**
 * What every tracer provider of a process shares (start-tracing.ts for its main thread,
 * start-thread-tracing.ts for each engine worker thread): the OTLP/HTTP exporter and the resource.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { TracingSettings } from '../config.ts';
import { VERSION } from '../version.ts';

/**
 * Spans as OTLP/HTTP JSON to `<endpoint>/v1/traces` (the specification's path under
 * OTEL_EXPORTER_OTLP_ENDPOINT). The exporter adds OTEL_EXPORTER_OTLP_HEADERS itself.
 */
export function traceExporter(settings: TracingSettings): OTLPTraceExporter {
  return new OTLPTraceExporter({ url: `${settings.endpoint.replace(/\/+$/, '')}/v1/traces` });
}

/** `service.name` and `service.version` of the process's spans. */
export function serviceResource(serviceName: string): Resource {
  return resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName, [ATTR_SERVICE_VERSION]: VERSION });
}
