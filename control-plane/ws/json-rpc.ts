import { databaseUnavailable, isDatabaseUnavailable, RETRY_AFTER_SECONDS } from '../../shared/db/unavailable.ts';
import { errorCatalog, isServiceError, ServiceError, type ErrorCode } from '../../shared/errors.ts';
import { jsonProblem } from '../../shared/json-guard.ts';

/** JSON-RPC 2.0 error codes (docs/commands.md, "Errors"); -32001 is every refusal that is not one of the others. */
export const RPC_ERROR = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  refused: -32001,
} as const;

/** A batch may hold this many calls; past it the whole batch is one Invalid Request error. */
const MAX_BATCH = 1000;

type RpcId = string | number | null;

/** `error.data`: the REST failure envelope's fields without `status`, plus the HTTP status REST would answer. */
interface RpcErrorData {
  error: ErrorCode;
  message: string;
  http_status: number;
  [extra: string]: unknown;
}

export interface RpcError {
  code: number;
  message: string;
  data: RpcErrorData;
}

/**
 * Runs one call: resolves to the result object, or throws (a ServiceError for refusals). The
 * JSON-RPC layer never sees principals or commands, only this.
 */
export type Dispatch = (method: string, params: unknown) => Promise<Record<string, unknown>>;

/** Told about anything that is not a ServiceError (it is answered as `internal_error`, without detail). */
export type OnInternalError = (error: unknown) => void;

const RPC_CODE_OF: Partial<Record<ErrorCode, number>> = {
  unknown_command: RPC_ERROR.methodNotFound,
  invalid_request_body: RPC_ERROR.invalidParams,
};

/** Maps a thrown value onto a JSON-RPC error object. Stacks and SQL never leave. */
export function toRpcError(error: unknown, onInternal: OnInternalError): RpcError {
  let known: ServiceError;
  if (isDatabaseUnavailable(error)) {
    known = databaseUnavailable();
  } else if (isServiceError(error)) {
    known = error;
    if (known.status >= 500 && known.code !== 'unavailable') onInternal(error);
  } else {
    onInternal(error);
    known = new ServiceError('internal_error');
  }
  return {
    code: RPC_CODE_OF[known.code] ?? RPC_ERROR.refused,
    message: known.message,
    data: {
      error: known.code,
      message: known.message,
      ...known.extras,
      http_status: known.status,
      ...(known.code === 'unavailable' ? { retry_after: RETRY_AFTER_SECONDS } : {}),
      ...(known.retryAfterSeconds !== undefined ? { retry_after: known.retryAfterSeconds } : {}),
    },
  };
}

function envelopeError(code: number, errorCode: ErrorCode, message: string): RpcError {
  return { code, message, data: { error: errorCode, message, http_status: errorCatalog[errorCode].status } };
}

function errorResponse(id: RpcId, error: RpcError): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

function invalidRequest(id: RpcId, why: string): string {
  return errorResponse(id, envelopeError(RPC_ERROR.invalidRequest, 'invalid_request_body', `Invalid Request: ${why}`));
}

function isId(value: unknown): value is RpcId {
  return value === null || typeof value === 'string' || typeof value === 'number';
}

const MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * One element of a message: a response string, or undefined for a notification. A request that
 * is not valid JSON-RPC always gets an answer (id echoed when it is a valid id, else null), even
 * without an `id`: it was never a valid notification.
 */
async function handleCall(
  value: unknown,
  dispatch: Dispatch,
  onInternal: OnInternalError,
): Promise<string | undefined> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return invalidRequest(null, 'a request is a JSON object.');
  }
  const request = value as Record<string, unknown>;
  const id = Object.hasOwn(request, 'id') && isId(request.id) ? request.id : null;
  if (request.jsonrpc !== '2.0') return invalidRequest(id, 'jsonrpc must be "2.0".');
  if (typeof request.method !== 'string') return invalidRequest(id, 'method must be a string.');
  if (Object.hasOwn(request, 'id') && !isId(request.id))
    return invalidRequest(null, 'id must be a string, a number or null.');
  if (Object.hasOwn(request, 'params') && (typeof request.params !== 'object' || request.params === null)) {
    return invalidRequest(id, 'params must be an object or an array.');
  }
  const unknown = Object.keys(request).find((key) => !MEMBERS.has(key));
  if (unknown !== undefined) return invalidRequest(id, `unknown member ${JSON.stringify(unknown.slice(0, 100))}.`);

  const notification = !Object.hasOwn(request, 'id');
  try {
    const result = await dispatch(request.method, request.params);
    if (notification) return undefined;
    return JSON.stringify({ jsonrpc: '2.0', id, result: result ?? null });
  } catch (error) {
    // A notification's failure has nowhere to go (JSON-RPC 2.0 §4.1); internal ones are still logged.
    const rpcError = toRpcError(error, onInternal);
    return notification ? undefined : errorResponse(id, rpcError);
  }
}

/**
 * Answers one text message per JSON-RPC 2.0: a single call, or a batch whose calls run one
 * after another in array order and whose responses come back in that order (notifications
 * leave no entry). Resolves to the reply text, or undefined when nothing is owed. Never rejects.
 */
export async function handleRpcMessage(
  text: string,
  dispatch: Dispatch,
  onInternal: OnInternalError,
): Promise<string | undefined> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return errorResponse(
      null,
      envelopeError(RPC_ERROR.parse, 'invalid_request_body', 'Parse error: the message is not valid JSON.'),
    );
  }
  // The bounds every JSON the API accepts is held to (shared/json-guard.ts): depth, storable text.
  // A call's params are named as REST names its body, so both transports answer alike.
  const problem = jsonProblem(parsed);
  if (problem !== null) {
    const single =
      !Array.isArray(parsed) && typeof parsed === 'object' && parsed !== null
        ? (parsed as { id?: unknown; params?: unknown })
        : null;
    const id = single && (typeof single.id === 'string' || typeof single.id === 'number') ? single.id : null;
    const inParams = single ? jsonProblem(single.params) : null;
    const message = inParams !== null ? `Invalid body: ${inParams}.` : `Invalid params: ${problem}.`;
    return errorResponse(id, envelopeError(RPC_ERROR.invalidParams, 'invalid_request_body', message));
  }
  if (!Array.isArray(parsed)) return handleCall(parsed, dispatch, onInternal);
  if (parsed.length === 0) return invalidRequest(null, 'a batch holds at least one request.');
  if (parsed.length > MAX_BATCH) return invalidRequest(null, `a batch holds at most ${MAX_BATCH} requests.`);
  const responses: string[] = [];
  for (const call of parsed) {
    const response = await handleCall(call, dispatch, onInternal);
    if (response !== undefined) responses.push(response);
  }
  return responses.length > 0 ? `[${responses.join(',')}]` : undefined;
}

/** A server-to-client notification (no `id`): the push channel of `subscribe` (docs/sessions-and-events.md, "Live updates (WebSocket only)"). */
export function notificationText(method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', method, params });
}

/**
 * The answer to a message refused before it was parsed (a large message past its account's or
 * address's admission): `id` is null, as for any request whose id could not be read, and
 * `data.retry_after` says when to send it again.
 */
export function refusedFrameReply(error: ServiceError): string {
  return errorResponse(
    null,
    toRpcError(error, () => undefined),
  );
}

/** The answer to a binary frame: requests are JSON text, so it is a parse error like any non-JSON. */
export function binaryFrameReply(): string {
  return errorResponse(
    null,
    envelopeError(
      RPC_ERROR.parse,
      'invalid_request_body',
      'Parse error: binary frames are not accepted; send JSON-RPC as text frames.',
    ),
  );
}
