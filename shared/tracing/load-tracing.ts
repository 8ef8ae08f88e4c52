/**
 * Tracing for an entry file (control-plane/main.ts, runner/main.ts): null while
 * OTEL_EXPORTER_OTLP_ENDPOINT is unset, and then nothing of the SDK is imported.
 */
import type { TracingSettings } from '../config.ts';
import type { ProcessTracing } from './tracing.ts';

export type { ProcessTracing };

/** Starts tracing for this process when `settings` says so (see start-tracing.ts). */
export async function loadTracing(
  settings: TracingSettings | null,
  serviceName: string,
): Promise<ProcessTracing | null> {
  if (settings === null) return null;
  const { startTracing } = await import('./start-tracing.ts');
  return startTracing(settings, serviceName);
}
