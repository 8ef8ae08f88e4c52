import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { defaultOf, limitRefusal } from '../../shared/limits/index.ts';
import { parseInput } from '../../shared/validate.ts';
import { requireRole, revisionFor } from '../access/standing.ts';
import type { Principal } from '../auth/principal.ts';
import type { RevisionCommand, RevisionScope } from '../commands/command.ts';
import {
  downloadSessionFile,
  fileRefSchema,
  fileTargetSchema,
  readSessionFile,
  storeSessionFile,
  uploadSessionFile,
} from '../commands/session-objects.ts';
import type { AppContext } from '../context.ts';
import { limitInForce } from '../../shared/limits/in-force.ts';
import { ok } from '../reply.ts';
import { binary, routeSchema, success } from '../openapi/route-schema.ts';
import { sessionFileSchema } from '../openapi/records.ts';

const pathParams = z.strictObject({ revision_id: refSchema });

/**
 * The upload body may be one byte past `workflow.session_file_bytes` (fixed, so its default is the
 * value for everyone), so that a body at ceiling + 1 reaches writeSessionFile and is refused there,
 * by the same check the JSON-RPC command meets. Larger bodies are refused while being read, with
 * the same code (see the error handler below).
 */
const UPLOAD_BODY_LIMIT = defaultOf('workflow.session_file_bytes') + 1;

/**
 * The checks a revision command gets from the registry, in the same order: the revision must be
 * readable (404), its blob type must answer the command (404 `unknown_command`), and the caller
 * needs the command's role (403).
 */
async function scopeFor(
  ctx: AppContext,
  principal: Principal,
  revisionId: string,
  command: RevisionCommand,
): Promise<RevisionScope> {
  const scope = await revisionFor(ctx.db, principal, revisionId, 'read');
  if (!command.blobTypes.some((type) => type === scope.blob.type)) {
    throw new ServiceError(
      'unknown_command',
      `A ${scope.blob.type} revision has no command ${JSON.stringify(command.name)}.`,
    );
  }
  requireRole(scope.role, command.role, 'revision');
  return scope;
}

/** `X-Request-Body`: the upload's params as JSON in one header (docs/session-contents.md, "Upload Session File"). */
function requestBodyHeader(request: FastifyRequest): z.output<typeof fileTargetSchema> {
  const raw = request.headers['x-request-body'];
  if (typeof raw !== 'string' || raw.length === 0) {
    throw new ServiceError(
      'invalid_request_body',
      'The X-Request-Body header is required: {"session_id", "alias", "content_type"?} as JSON.',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ServiceError('invalid_request_body', 'The X-Request-Body header is not valid JSON.');
  }
  return parseInput(fileTargetSchema, value, 'X-Request-Body');
}

const TAGS = ['Commands'];
/** `X-Request-Body` as the reference shows it: its JSON Schema, from the schema that parses it. */
const uploadHeaders = z.object({
  'x-request-body': z.string().meta({
    description: `The upload's params as JSON: ${JSON.stringify(z.toJSONSchema(fileTargetSchema, { io: 'input' }))}`,
  }),
});

interface PendingUpload {
  scope: RevisionScope;
  target: z.output<typeof fileTargetSchema>;
}

/**
 * Binary transfers of session files (docs/session-contents.md, "Binary transfers (REST)"):
 * `POST /v1/revisions/:revision_id/upload_session_file` (bytes in, JSON `object` out) and
 * `POST /v1/revisions/:revision_id/download_session_file` (JSON in, bytes out with the envelope in
 * `X-Response-Body`). Their static last segment wins over the command route's `:command`, so these
 * two names are binary over REST and base64 JSON over JSON-RPC; both land in the same functions.
 */
export async function sessionFileRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  await app.register(async (upload) => {
    const pending = new WeakMap<FastifyRequest, PendingUpload>();

    // Whatever its Content-Type, the body is the file's bytes; the stored type comes from
    // X-Request-Body. Scoped to this plugin, so no other route reads raw bodies.
    upload.removeAllContentTypeParsers();
    upload.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

    // Past the body limit fastify stops reading; that is this route's ceiling, so it answers as one.
    upload.setErrorHandler(async (error: FastifyError, request) => {
      if (error.code !== 'FST_ERR_CTP_BODY_TOO_LARGE') throw error;
      const scope = pending.get(request)?.scope;
      const inForce = scope
        ? await limitInForce(ctx.db, { blobId: scope.blob.id }, 'workflow.session_file_bytes')
        : {
            id: 'workflow.session_file_bytes' as const,
            value: defaultOf('workflow.session_file_bytes'),
            source: 'default' as const,
          };
      throw limitRefusal(
        'session_file_too_large',
        inForce,
        undefined,
        `The file is larger than ${String(inForce.value)} bytes (${inForce.id}).`,
      );
    });

    upload.post(
      '/revisions/:revision_id/upload_session_file',
      {
        bodyLimit: UPLOAD_BODY_LIMIT,
        config: { heavyBody: true },
        schema: routeSchema({
          tags: TAGS,
          summary: 'upload_session_file: store a session file from raw bytes',
          description:
            "The body is the file's bytes (any content type); the params are in `X-Request-Body`. `write` on a workflow revision. Over JSON-RPC the bytes are base64.",
          params: pathParams,
          headers: uploadHeaders,
          body: z.string().meta({ format: 'binary' }),
          consumes: ['application/octet-stream'],
          responses: { 200: success({ object: sessionFileSchema }, "The stored file's record.") },
          errors: [
            'not_found',
            'unknown_command',
            'forbidden',
            'session_file_too_large',
            'limit_exceeded',
            'conflict',
            'rate_limited',
          ],
        }),
        // Access and the header are checked before the body is read: a caller who may not write,
        // or whose header is malformed, is answered without spending 4 MiB of reading on it.
        async preParsing(request, _reply, payload) {
          const { revision_id } = parseInput(pathParams, request.params, 'path');
          const scope = await scopeFor(ctx, request.principal, revision_id, uploadSessionFile);
          pending.set(request, { scope, target: requestBodyHeader(request) });
          return payload;
        },
      },
      async (request) => {
        const { scope, target } = pending.get(request)!;
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        return ok({ object: await storeSessionFile(ctx, scope, target, body) });
      },
    );
  });

  app.post(
    '/revisions/:revision_id/download_session_file',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: "download_session_file: a session file's bytes",
        description:
          'Answers the bytes with the stored content type; `X-Response-Body: {"status":"success","size","content_type"}`. `read` on a workflow revision.',
        params: pathParams,
        body: fileRefSchema,
        responses: { 200: binary("The file's bytes.", '*/*') },
        errors: ['not_found', 'unknown_command', 'forbidden'],
      }),
    },
    async (request, reply) => {
      const { revision_id } = parseInput(pathParams, request.params, 'path');
      const scope = await scopeFor(ctx, request.principal, revision_id, downloadSessionFile);
      const ref = parseInput(fileRefSchema, request.body ?? {});
      const file = await readSessionFile(ctx, scope, ref);
      return (
        reply
          .header('content-type', file.content_type)
          .header(
            'x-response-body',
            JSON.stringify({ status: 'success', size: file.size, content_type: file.content_type }),
          )
          // The type is the uploader's: a browser must not sniff it into something it can run.
          .header('x-content-type-options', 'nosniff')
          .header('content-disposition', 'attachment')
          .send(file.content)
      );
    },
  );
}
