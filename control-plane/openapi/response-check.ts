import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { zodProblems } from '../../shared/validate.ts';
import { PiecedAnswer } from '../reply.ts';

/**
 * What is wrong with an answer against the route's documented responses (`schema.response` of
 * routeSchema), or null when it matches: the status must be documented, a JSON body must pass its
 * schema, any other body must have a documented content type.
 */
export function responseProblem(
  responses: Record<string, unknown>,
  status: number,
  contentType: string,
  payload: unknown,
): string | null {
  const documented = responses[status] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
  if (documented === undefined)
    return `status ${status} is not documented (documented: ${Object.keys(responses).join(', ')})`;
  const json = contentType.startsWith('application/json');
  if (documented instanceof z.ZodType) {
    if (!json)
      return `status ${status} is documented as JSON, the answer is ${contentType || 'without a content type'}`;
    let body: unknown;
    try {
      body = JSON.parse(
        typeof payload === 'string' ? payload : payload instanceof PiecedAnswer ? payload.text() : String(payload),
      );
    } catch {
      return 'the body is not JSON';
    }
    const result = documented.safeParse(body);
    return result.success ? null : zodProblems(result.error, 'body');
  }
  const content = (documented as { content?: Record<string, unknown> }).content ?? {};
  const type = contentType.split(';')[0]!.trim();
  return Object.hasOwn(content, type) || Object.hasOwn(content, '*/*')
    ? null
    : `content type ${type} is not documented for status ${status}`;
}

/**
 * For tests (BuildAppOptions.checkResponses): every answer of a route that documents its
 * responses is held to them. One that does not match becomes a 500 `internal_error` whose message
 * says which route, status and field, and the same line goes to stderr, so the test that made the
 * request fails loudly and the document cannot drift from what the routes answer.
 */
export function registerResponseCheck(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const responses = request.routeOptions.schema?.response as Record<string, unknown> | undefined;
    // HEAD answers carry GET's headers without its body.
    if (responses === undefined || request.method === 'HEAD') return payload;
    const problem = responseProblem(
      responses,
      reply.statusCode,
      String(reply.getHeader('content-type') ?? ''),
      payload,
    );
    if (problem === null) return payload;
    const message = `The answer of ${request.method} ${request.routeOptions.url} does not match its documented response (${reply.statusCode}): ${problem}`;
    process.stderr.write(`response check: ${message}\n`);
    reply.code(500).header('content-type', 'application/json; charset=utf-8');
    return JSON.stringify(new ServiceError('internal_error', message).toEnvelope());
  });
}
