import type { FastifyError, FastifyInstance } from 'fastify';
import { databaseUnavailable, isDatabaseUnavailable, RETRY_AFTER_SECONDS } from '../../shared/db/unavailable.ts';
import { ServiceError, type ErrorCode } from '../../shared/errors.ts';
import { storableText } from '../../shared/json-guard.ts';
import { guardedJson } from '../bodies/guarded-json.ts';

/** Maps fastify's own failures (body parsing, size) onto catalogued codes. */
function fromFastify(error: FastifyError): ServiceError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ServiceError('payload_too_large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ServiceError('invalid_request_body', 'Unsupported Content-Type: send application/json.');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ServiceError('invalid_request_body', 'The JSON body is empty.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ServiceError('invalid_request_body', 'The body is not valid JSON.');
  }
  if (error instanceof SyntaxError || (error as { statusCode?: number }).statusCode === 400) {
    return new ServiceError('invalid_request_body', 'The request could not be parsed.');
  }
  const byStatus: Record<number, ErrorCode> = {
    401: 'unauthorized',
    403: 'forbidden',
    404: 'not_found',
    413: 'payload_too_large',
  };
  const code = byStatus[(error as { statusCode?: number }).statusCode ?? 0];
  return code ? new ServiceError(code) : undefined;
}

/** Methods a path may answer, for 405's Allow (OPTIONS is CORS's catch-all preflight: it says nothing of a path). */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * Puts every failure into the envelope: thrown service errors, fastify's parsing errors, unknown
 * routes and anything unexpected (logged with its stack, answered without it).
 */
export function registerEnvelope(app: FastifyInstance): void {
  // A JSON body is an object wherever one is taken: a bare `null` is refused like malformed JSON
  // (left to the routes, it read as "no body", which some of them accept). The bytes must be
  // UTF-8 (not decoded into U+FFFD and stored so), and the value within the bounds of
  // shared/json-guard.ts (depth, storable text), before any route sees it
  // (control-plane/bodies/guarded-json.ts; the command route sends large bodies to a thread).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    const parsed = guardedJson(body as Buffer);
    if ('refusal' in parsed) return done(new ServiceError('invalid_request_body', parsed.refusal), undefined);
    done(null, parsed.value);
  });
  // Path parameters are text the database compares and stores too.
  app.addHook('preValidation', async (request) => {
    const params = request.params as Record<string, unknown> | undefined;
    if (!params) return;
    for (const [name, value] of Object.entries(params)) {
      if (typeof value === 'string' && !storableText(value))
        throw new ServiceError('invalid_request_body', `Invalid path: ${name} holds U+0000 or an unpaired surrogate.`);
    }
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (isDatabaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable');
      return reply
        .code(503)
        .header('retry-after', String(RETRY_AFTER_SECONDS))
        .send(databaseUnavailable().toEnvelope());
    }
    const known = error instanceof ServiceError ? error : fromFastify(error);
    if (known) {
      if (known.code === 'unavailable') reply.header('retry-after', String(RETRY_AFTER_SECONDS));
      else if (known.retryAfterSeconds !== undefined) reply.header('retry-after', String(known.retryAfterSeconds));
      else if (known.status >= 500) request.log.error({ err: error }, 'request failed');
      return reply.code(known.status).send(known.toEnvelope());
    }
    request.log.error({ err: error }, 'unexpected error');
    const internal = new ServiceError('internal_error');
    return reply.code(internal.status).send(internal.toEnvelope());
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!;
    // A path that exists under other methods is 405 with Allow, not 404.
    const allowed = METHODS.filter(
      (method) => method !== request.method && app.findRoute({ method, url: path }) !== null,
    );
    if (allowed.length > 0) {
      const error = new ServiceError(
        'method_not_allowed',
        `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}.`,
      );
      return reply.code(405).header('allow', allowed.join(', ')).send(error.toEnvelope());
    }
    const error = new ServiceError('not_found', `No route ${request.method} ${path}.`);
    return reply.code(404).send(error.toEnvelope());
  });
}
