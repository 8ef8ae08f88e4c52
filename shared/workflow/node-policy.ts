/**
 * A node's own run policy (docs/workflow.md, "Retries and timeouts"): `retry` (attempts and the
 * backoff between them) and `timeout_seconds`. validate-graph.ts checks both where a definition
 * is created or checked; the runner (runner/engine/node-policy.ts) reads them with the same
 * schemas when it runs the node, so a graph stored before a rule changed still runs as checked.
 */
import { z } from 'zod';
import { defaultOf } from '../limits/catalog.ts';

/** Most attempts one node run may take (structural, like the graph's size bounds). */
const MAX_ATTEMPTS = 100;

/** The longest wait between two attempts: `workflow.sleep_seconds`, fixed, the bound of any wait. */
const MAX_RETRY_INTERVAL_SECONDS = defaultOf('workflow.sleep_seconds');

/** Largest backoff factor: past it the second wait already reaches any interval cap. */
const MAX_BACKOFF_FACTOR = 10;

/** Error codes one `retry.on_codes` may list. */
const MAX_ON_CODES = 50;

const seconds = z.number().int().min(0).max(MAX_RETRY_INTERVAL_SECONDS);

/** `retry`: every field but `max_attempts` has a default. */
export const retrySchema = z.strictObject({
  max_attempts: z.number().int().min(1).max(MAX_ATTEMPTS),
  initial_interval_seconds: seconds.default(1),
  backoff_factor: z.number().min(1).max(MAX_BACKOFF_FACTOR).default(2),
  max_interval_seconds: seconds.default(3600),
  jitter: z.boolean().default(false),
  on_codes: z
    .array(z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'error codes are 1-64 characters of a-z 0-9 _'))
    .min(1)
    .max(MAX_ON_CODES)
    .optional(),
});

export type RetryPolicy = z.output<typeof retrySchema>;

/** `timeout_seconds`: a whole number of seconds, at least 1; the ceiling in force bounds it (see `timeoutCeiling`). */
export const timeoutSchema = z.number().int().min(1);

/** The error code of a node run stopped by its own `timeout_seconds`. */
export const NODE_TIMEOUT = 'node_timeout';

/** Codes of the runs a bound stopped: they retry by default although their error carries a `limit`. */
const TIMEOUT_CODES: ReadonlySet<string> = new Set([NODE_TIMEOUT, 'code_timeout', 'model_timeout']);

/**
 * The limit in force that bounds a node's `timeout_seconds`: `workflow.code_run_seconds` for the
 * processors it already bounds (`logic.code`, `onnx.run`), `workflow.execution_seconds` for the
 * others. `logic.sleep` takes no timeout (its wait is not a run).
 */
export function timeoutCeiling(processor: string): 'workflow.code_run_seconds' | 'workflow.execution_seconds' | null {
  if (processor === 'logic.sleep') return null;
  return processor === 'logic.code' || processor === 'onnx.run'
    ? 'workflow.code_run_seconds'
    : 'workflow.execution_seconds';
}

/**
 * Whether a failed attempt is retried under `policy`: the node's own errors and timeouts, never a
 * refusal by a limit (an error carrying a `limit` object, other than a timeout's); `on_codes`,
 * when set, narrows that to the codes it lists.
 */
export function retryable(error: { code: string; limit?: unknown }, policy: RetryPolicy): boolean {
  const refusal = error.code === 'limit_exceeded' || (error.limit !== undefined && !TIMEOUT_CODES.has(error.code));
  if (refusal) return false;
  return policy.on_codes === undefined || policy.on_codes.includes(error.code);
}

/**
 * Seconds to wait after attempt `attempt` (1 for the first) failed: `initial_interval_seconds ×
 * backoff_factor^(attempt−1)`, at most `max_interval_seconds`, rounded up to whole seconds; with
 * `jitter`, a uniform draw between half of that and all of it, so retries of many executions
 * that failed together spread out.
 */
export function retryWaitSeconds(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const raw = policy.initial_interval_seconds * policy.backoff_factor ** Math.max(0, attempt - 1);
  const capped = Math.min(policy.max_interval_seconds, raw);
  const wait = policy.jitter ? capped / 2 + random() * (capped / 2) : capped;
  return Math.min(MAX_RETRY_INTERVAL_SECONDS, Math.ceil(wait));
}
