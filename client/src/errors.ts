/**
 * The service's refusals, as one typed error for both transports. REST answers the failure
 * envelope `{status: "failure", error, message, limit?, errors?}`; JSON-RPC carries the same
 * fields in `error.data` (docs/errors.md). Match on `error` (the stable code) and `limit.id`,
 * never on `message`, which is prose.
 */

/** The limit object of a limit refusal (docs/errors.md, "The failure envelope"). */
export interface LimitObject {
  id: string;
  value: unknown;
  /** Quotas only: how many the holder held when the request arrived. */
  held?: number;
}

/** One validation issue of `invalid_definition` / `check_definition` (docs/workflow.md). */
export interface DefinitionIssue {
  code: string;
  node: string | null;
  field: string | null;
  message: string;
}

/** The fields of a failure envelope, as either transport delivers them. */
export interface FailureFields {
  error: string;
  message: string;
  limit?: LimitObject;
  errors?: DefinitionIssue[];
}

/** A refusal of the service: the envelope's `error`, `message` and `limit`, typed. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** The catalogue code (`limit_exceeded`, `not_found`, …). */
  readonly error: string;
  /** The limit object, on limit refusals. */
  readonly limit: LimitObject | undefined;
  /** The validation issues, on `invalid_definition`. */
  readonly errors: DefinitionIssue[] | undefined;
  /** The HTTP status REST answered, or that REST would answer (JSON-RPC `data.http_status`). */
  readonly status: number;
  /** The JSON-RPC error code (-32700 … -32001) when the refusal came over the WebSocket. */
  readonly rpcCode: number | undefined;
  /** Seconds to wait before trying again (`unavailable`). */
  readonly retryAfter: number | undefined;

  constructor(fields: FailureFields, status: number, extras: { rpcCode?: number; retryAfter?: number } = {}) {
    super(fields.message);
    this.error = fields.error;
    this.limit = fields.limit;
    this.errors = fields.errors;
    this.status = status;
    this.rpcCode = extras.rpcCode;
    this.retryAfter = extras.retryAfter;
  }

  /** One line for people: `limit_exceeded: Limit … (limit platform.orgs_per_user = 1, held 1)`. */
  describe(): string {
    let line = `${this.error}: ${this.message}`;
    if (this.limit) {
      line += ` (limit ${this.limit.id} = ${JSON.stringify(this.limit.value)}`;
      if (this.limit.held !== undefined) line += `, held ${this.limit.held}`;
      line += ')';
    }
    return line;
  }
}

/**
 * The connection failed or closed before an answer came: nothing is known about whether the call
 * ran. A create retried with the same idempotency key is safe; the client retries reads and keyed
 * creates itself after a reconnect.
 */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
  /** The WebSocket close code, when the socket closed. */
  readonly code: number | undefined;

  constructor(message: string, code?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Whether `value` looks like a failure envelope (or JSON-RPC `error.data`). */
export function isFailureFields(value: unknown): value is FailureFields {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.error === 'string' && typeof v.message === 'string';
}

/** The ApiError of a REST failure envelope; a body that is not one becomes `internal_error`. */
export function restError(body: unknown, response: Response): ApiError {
  const retryAfter = Number(response.headers.get('retry-after') ?? NaN);
  const extras = Number.isFinite(retryAfter) ? { retryAfter } : {};
  if (isFailureFields(body)) return new ApiError(body, response.status, extras);
  return new ApiError(
    { error: 'internal_error', message: `HTTP ${response.status} without a failure envelope` },
    response.status,
    extras,
  );
}

/** The ApiError of a JSON-RPC error object (`data` holds the envelope's fields). */
export function rpcError(error: { code: number; message: string; data?: unknown }): ApiError {
  const data = error.data as (FailureFields & { http_status?: number; retry_after?: number }) | undefined;
  if (isFailureFields(data)) {
    const extras: { rpcCode: number; retryAfter?: number } = { rpcCode: error.code };
    if (typeof data.retry_after === 'number') extras.retryAfter = data.retry_after;
    const fields: FailureFields = { error: data.error, message: data.message };
    if (data.limit) fields.limit = data.limit;
    if (data.errors) fields.errors = data.errors;
    return new ApiError(fields, data.http_status ?? 500, extras);
  }
  return new ApiError({ error: 'internal_error', message: error.message }, 500, { rpcCode: error.code });
}
