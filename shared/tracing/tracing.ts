/**
 * The service's seam to OpenTelemetry (docs/operations.md, "Tracing"). Code that makes spans sees
 * only this interface, handed to it as a value that is null while tracing is off: the SDK is
 * imported lazily by `loadTracing` (entries) and `loadWorkerTracing` (engine worker threads) when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set, and with tracing off a span costs a null check.
 *
 * Spans carry only bounded values (ids, processor names, statuses, codes); never input, output,
 * code or anything else a user wrote.
 */

import type { FastifyPluginCallback } from 'fastify';

/** Attribute values a span takes: no objects, nothing unbounded. */
export type SpanAttributes = Record<string, string | number | boolean>;

/** A span in progress. */
export interface TraceSpan {
  /** The W3C `traceparent` of this span: what its children, and an execution it creates, carry. */
  readonly traceparent: string;
  setAttributes(attributes: SpanAttributes): void;
  /** Ends the span; with `errorCode` (a code such as `internal_error`, never a message) it ends failed. */
  end(errorCode?: string): void;
}

export interface SpanOptions {
  /**
   * The parent as a `traceparent` (a stored execution's, a worker's execution span). Undefined:
   * the span active in this async context (the request's), or a new trace. Null or malformed: a new trace.
   */
  parent?: string | null | undefined;
  attributes?: SpanAttributes;
}

/** What tracing offers the code that makes spans; null while tracing is off. */
export interface Tracing {
  startSpan(name: string, options?: SpanOptions): TraceSpan;
  /**
   * Runs `fn` with a new span active, so what instrumented calls it makes (pg queries) become its
   * children; ends the span when `fn` settles (failed when it throws).
   */
  inSpan<T>(name: string, options: SpanOptions, fn: (span: TraceSpan) => Promise<T>): Promise<T>;
  /** Exports what is buffered and stops; later spans are dropped. */
  shutdown(): Promise<void>;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A well-formed version-00 traceparent's parts, or undefined (all-zero ids are invalid too). */
export function parseTraceparent(
  traceparent: string | null | undefined,
): { traceId: string; spanId: string; flags: number } | undefined {
  const match = traceparent === null || traceparent === undefined ? null : TRACEPARENT.exec(traceparent);
  if (match === null || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return undefined;
  return { traceId: match[1]!, spanId: match[2]!, flags: Number.parseInt(match[3]!, 16) };
}

/** The trace id an execution's log lines carry (`trace_id`), from its stored traceparent. */
function traceIdOf(traceparent: string | null | undefined): string | undefined {
  return parseTraceparent(traceparent)?.traceId;
}

/** Log fields of an execution: its id, and its trace id when it has a trace. */
export function executionLogFields(execution: { id: string; traceparent?: string | null | undefined }): {
  execution_id: string;
  trace_id?: string;
} {
  const traceId = traceIdOf(execution.traceparent);
  return traceId === undefined ? { execution_id: execution.id } : { execution_id: execution.id, trace_id: traceId };
}

/** Longest string attribute value kept (node ids are user-chosen names; processors are a fixed set). */
const MAX_ATTRIBUTE_CHARS = 128;

/** `value` cut to MAX_ATTRIBUTE_CHARS. */
export function bounded(value: string): string {
  return value.length <= MAX_ATTRIBUTE_CHARS ? value : value.slice(0, MAX_ATTRIBUTE_CHARS);
}

/** A process's tracing once started. */
export interface ProcessTracing {
  tracing: Tracing;
  /** @fastify/otel, for buildApp to register before its routes (a span per REST request). */
  fastifyPlugin: FastifyPluginCallback;
  /** Whether the already loaded modules were patched (start-tracing.ts); the entry warns if not. */
  instrumented: { http: boolean; pg: boolean };
}
