/**
 * The one error catalogue: every `error` code the service answers with, its HTTP status and a
 * default message. Codes and statuses are those of docs/errors.md ("The catalogue"), which lists the
 * same codes and test/errors.test.ts keeps the two in step.
 */
export const errorCatalog = {
  invalid_request_body: { status: 400, message: 'The request body or parameters are invalid.' },
  invalid_cursor: { status: 400, message: 'The cursor is not one this listing issued.' },
  invalid_limit: { status: 400, message: 'The limit is outside the allowed range.' },
  invalid_definition: { status: 400, message: 'The workflow definition failed validation.' },
  invalid_model: { status: 400, message: 'ONNX Runtime could not open the uploaded model.' },
  model_run_failed: { status: 400, message: 'ONNX Runtime failed to run the model on these inputs.' },
  model_timeout: { status: 400, message: 'The model ran longer than its bound and was stopped.' },
  limit_exceeded: { status: 400, message: 'A limit refused the request.' },
  invalid_blob_type: { status: 400, message: 'The blob type is not available to this organization.' },
  session_object_too_large: { status: 400, message: 'The session object is larger than allowed.' },
  session_file_too_large: { status: 400, message: 'The session file is larger than allowed.' },
  thread_item_too_large: { status: 400, message: 'The thread item is larger than allowed.' },
  too_many_files: { status: 400, message: 'The thread item references too many files.' },
  graph_element_too_large: { status: 400, message: 'A graph element is larger than allowed.' },
  graph_mutation_too_large: { status: 400, message: 'The graph mutation has too many operations.' },
  graph_traversal_limit_exceeded: { status: 400, message: 'The graph query exceeded a traversal cap.' },
  cannot_mint_while_acting: {
    status: 400,
    message: 'Organization and blob keys cannot be minted with an acting token.',
  },
  unauthorized: { status: 401, message: 'Missing, invalid, expired or revoked credentials.' },
  forbidden: { status: 403, message: 'The caller may not perform this operation.' },
  not_found: { status: 404, message: 'No such resource.' },
  unknown_command: { status: 404, message: 'The revision does not answer this command.' },
  alias_taken: { status: 409, message: 'The alias is already in use.' },
  method_not_allowed: { status: 405, message: 'The path does not answer this method.' },
  conflict: { status: 409, message: 'The resource is in a state that forbids the operation.' },
  payload_too_large: { status: 413, message: 'The request body is too large.' },
  uri_too_long: { status: 414, message: 'A path segment is too long.' },
  rate_limited: { status: 429, message: 'Too many requests from this address; try again after Retry-After seconds.' },
  cursor_record_deleted: { status: 500, message: 'The record the cursor names was deleted.' },
  internal_error: { status: 500, message: 'An unexpected error occurred.' },
  unavailable: { status: 503, message: 'The database cannot be reached; try again shortly.' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalog;

/** The limit object carried by refusals: the value in force and, for quotas, what was held. */
export interface LimitObject {
  id: string;
  value: number | boolean | string[] | null;
  held?: number;
}

/** Fields a refusal may carry beside `error` and `message` in the envelope. */
export interface ErrorExtras {
  limit?: LimitObject;
  errors?: unknown[];
}

/**
 * An error the service answers with. Crosses process boundaries as `{code, message}`; match on
 * `code`, never on the class.
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly extras: ErrorExtras;
  /** When the client may try again: REST sends it as `Retry-After`, JSON-RPC as `data.retry_after`. Never in the body. */
  retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message?: string, extras: ErrorExtras = {}, options?: ErrorOptions) {
    super(message ?? errorCatalog[code].message, options);
    this.name = 'ServiceError';
    this.code = code;
    this.status = errorCatalog[code].status;
    this.extras = extras;
  }

  /** The REST failure envelope of this error. */
  toEnvelope(): Record<string, unknown> {
    return { status: 'failure', error: this.code, message: this.message, ...this.extras };
  }
}

/** Shorthand for `throw new ServiceError(...)` in expression position. */
export function fail(code: ErrorCode, message?: string, extras?: ErrorExtras): never {
  throw new ServiceError(code, message, extras);
}

/** True when `value` carries a catalogued code (works across realms and worker threads). */
export function isServiceError(value: unknown): value is ServiceError {
  return (
    typeof value === 'object' &&
    value !== null &&
    'code' in value &&
    typeof (value as { code: unknown }).code === 'string' &&
    Object.hasOwn(errorCatalog, (value as { code: string }).code) &&
    value instanceof Error
  );
}
