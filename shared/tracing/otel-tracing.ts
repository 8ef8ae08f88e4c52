/**
 * The Tracing seam (tracing.ts) over an OpenTelemetry tracer. Imported only when tracing is on
 * (start-tracing.ts, start-thread-tracing.ts), like everything that imports `@opentelemetry/*`.
 */
import { context, ROOT_CONTEXT, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { parseTraceparent, type SpanOptions, type TraceSpan, type Tracing } from './tracing.ts';

/** The context a span starts in: the given traceparent's, the active one, or none (a new trace). */
function parentContext(parent: string | null | undefined): Context {
  if (parent === undefined) return context.active();
  const parsed = parseTraceparent(parent);
  if (parsed === undefined) return ROOT_CONTEXT;
  // Only the sampled bit: a stored execution keeps the decision of the request that created it.
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parsed.traceId,
    spanId: parsed.spanId,
    traceFlags: parsed.flags & 1,
    isRemote: true,
  });
}

function traceSpan(span: Span): TraceSpan {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return {
    traceparent: `00-${traceId}-${spanId}-0${traceFlags & 1}`,
    setAttributes: (attributes) => {
      span.setAttributes(attributes);
    },
    end: (errorCode) => {
      if (errorCode !== undefined) {
        span.setAttribute('error.type', errorCode);
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorCode });
      }
      span.end();
    },
  };
}

/** The code an error is known by (a ServiceError's, `{code, message}` across threads), else `internal_error`. */
function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[a-z_]{1,64}$/.test(code) ? code : 'internal_error';
}

/** Tracing over `tracer`; `shutdown` flushes and stops what exports its spans. */
export function otelTracing(tracer: Tracer, shutdown: () => Promise<void>): Tracing {
  return {
    startSpan(name, options: SpanOptions = {}) {
      return traceSpan(
        tracer.startSpan(
          name,
          options.attributes ? { attributes: options.attributes } : {},
          parentContext(options.parent),
        ),
      );
    },
    inSpan(name, options, fn) {
      const parent = parentContext(options.parent);
      const span = tracer.startSpan(name, options.attributes ? { attributes: options.attributes } : {}, parent);
      const handle = traceSpan(span);
      return context.with(trace.setSpan(parent, span), async () => {
        try {
          const result = await fn(handle);
          handle.end();
          return result;
        } catch (error) {
          handle.end(codeOf(error));
          throw error;
        }
      });
    },
    shutdown,
  };
}
