/**
 * What crosses the sandbox boundary, in both directions: the request for one `logic.code` node
 * run, its result, and the `{code, message}` errors. Everything here is plain data, so the runner
 * can post it between worker threads unchanged. Match errors on `code`, never on a class.
 */
import { isServiceError, type LimitObject } from '../shared/errors.ts';
import { EGRESS_CODES } from '../shared/egress/egress-error.ts';
import { MAX_PROPERTY_ESCAPES } from '../shared/workflow/property-escapes.ts';

/** JSON data: the only kind of value that enters or leaves an isolate. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Levels of `ctx.log` and `console` inside the isolate. */
export const logLevels = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof logLevels)[number];

/** An error crossing the boundary. `limit` rides along when a limit refused a host call. */
export interface CodeError {
  code: string;
  message: string;
  limit?: LimitObject;
}

/**
 * A host call's failure as the code may see it: a catalogued refusal (a ServiceError) or an
 * outside call's (`egress_*`, shared/egress/egress-error.ts), with its code, message and limit;
 * null for anything else, which the code sees only as `internal_error`.
 */
export function hostRefusal(error: unknown): CodeError | null {
  if (isServiceError(error)) {
    const refusal: CodeError = { code: error.code, message: error.message };
    if (error.extras?.limit) refusal.limit = error.extras.limit;
    return refusal;
  }
  const code: unknown = error instanceof Error ? (error as Error & { code?: unknown }).code : undefined;
  if (typeof code === 'string' && (EGRESS_CODES as readonly string[]).includes(code))
    return { code, message: (error as Error).message };
  return null;
}

/** The execution's identifiers, readable inside the isolate as `ctx.ids`. */
interface RunIds {
  executionId: string;
  sessionId: string;
  node: string;
}

/** One `logic.code` node run. */
export interface CodeRequest {
  /** ES module source; its default export `(input, ctx)` is called. */
  code: string;
  /** The node's input (the previous node's output, or the execution's `input_data`). */
  input: JsonValue;
  /** `workflow.code_imports` as resolved when the execution was created. */
  imports: readonly string[];
  /** Wall-clock bound of the whole run (`workflow.code_run_seconds` × 1000). */
  timeoutMs: number;
  ids: RunIds;
  /**
   * Whose runs may share a context with this one: the execution's organization id. Contexts are
   * kept per tenant and never serve another (docs/sandbox.md); without a tenant the run gets a
   * context of its own, used once.
   */
  tenant?: string;
}

/** Measurements of one run, for logs and metrics; nothing depends on them. */
export interface RunStats {
  /** Wall-clock time from the isolate being leased to the result. */
  wallMs: number;
  /** CPU time the isolate spent, or null when it was disposed before it could be read. */
  cpuMs: number | null;
  hostCalls: number;
  logs: number;
  logsDropped: number;
}

/** How a run ended: an output on `success`, an output on a named route, or an error (`failure`). */
export type CodeResult =
  | { kind: 'output'; output: JsonValue; stats: RunStats }
  | { kind: 'route'; route: string; output: JsonValue; stats: RunStats }
  | { kind: 'error'; error: CodeError; stats: RunStats };

/**
 * Bounds a pool applies to every run. Sizes are measured on the serialized JSON. Defaults are in
 * `defaultBounds`; docs/sandbox.md explains each.
 */
export interface SandboxBounds {
  /** Largest serialized output (bytes). */
  maxOutputBytes: number;
  /** Log entries kept per run; later ones are counted as dropped. */
  maxLogEntries: number;
  /** Longest log entry (bytes); longer ones are truncated. */
  maxLogEntryBytes: number;
  /** Largest serialized argument list of one ctx call (bytes). */
  maxCallBytes: number;
  /** ctx calls per run. */
  maxCalls: number;
  /** ctx calls awaiting the host at once; more wait inside the isolate. */
  maxCallsInFlight: number;
  /** Random bytes `crypto.getRandomValues` may draw from the host per run. */
  maxRandomBytes: number;
  /** Longest error message kept (characters). */
  maxMessageChars: number;
  /**
   * Memory outside the isolate's heap one run may make (bytes), at the run caps' charges
   * (sandbox/run-caps-source.ts): resizable `ArrayBuffer`s' `maxByteLength`, `Intl` objects,
   * `Intl.Segmenter` output. A pool's default is its `memoryMb`.
   */
  maxOutsideHeapBytes: number;
  /**
   * `Intl` objects one run may make (any of the constructors): each costs ICU's time to build
   * (≈ 0.15–0.3 ms a `DateTimeFormat`), which the byte budget alone let reach a second per run.
   */
  maxIntlObjects: number;
  /**
   * Characters `Intl.Segmenter` may copy for one run (`segment()` and each iterator of its result
   * copy the string): ICU's time over the text, ≈ 10–20 ns a character.
   */
  maxSegmentedChars: number;
  /** Source text one run may hand to `eval`, the `Function` constructors and `RegExp` (characters). */
  maxSourceChars: number;
  /** Unicode property escapes (`\p{…}`) in the source text one run hands to the compiler. */
  maxPropertyEscapes: number;
}

export const defaultBounds: Readonly<SandboxBounds> = Object.freeze({
  maxOutputBytes: 5 * 1024 * 1024,
  maxLogEntries: 200,
  maxLogEntryBytes: 8 * 1024,
  maxCallBytes: 8 * 1024 * 1024,
  maxCalls: 10_000,
  maxCallsInFlight: 16,
  maxRandomBytes: 1024 * 1024,
  maxMessageChars: 2048,
  maxOutsideHeapBytes: 64 * 1024 * 1024,
  maxIntlObjects: 256,
  maxSegmentedChars: 2 * 1024 * 1024,
  maxSourceChars: 256 * 1024,
  maxPropertyEscapes: MAX_PROPERTY_ESCAPES,
});
