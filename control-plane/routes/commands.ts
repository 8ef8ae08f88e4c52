import type { FastifyInstance } from 'fastify';
import { isUtf8 } from 'node:buffer';
import { z } from 'zod';
import { refSchema } from '../../shared/ids.ts';
import { parseInput } from '../../shared/validate.ts';
import {
  COMMAND_MESSAGE_LIMIT,
  COMMANDS,
  createCommandRegistry,
  runRevisionCommand,
  type CommandRegistry,
} from '../commands/registry.ts';
import { ok } from '../reply.ts';
import { routeSchema } from '../openapi/route-schema.ts';
import { errorCatalog, type ErrorCode } from '../../shared/errors.ts';
import { ServiceError } from '../../shared/errors.ts';
import { jsonLinesRecords } from '../commands/nlp-records.ts';
import { IDEMPOTENCY_HEADER } from '../idempotency/idempotency-key.ts';
import { REPLAYED_HEADER } from '../idempotency/idempotent.ts';

/** The body types besides JSON that the command route takes, for JSON_LINES_COMMAND only (docs/blob-types.md). */
export const JSON_LINES_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/jsonlines'];
export const JSON_LINES_COMMAND = 'upload_records';

/** A JSON Lines request body, as text until the route knows the command. */
class JsonLinesBody {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const pathParams = z.strictObject({ revision_id: refSchema, command: z.string().min(1).max(200) });

/**
 * The route as registered; the document shows one path per command instead, each with its params
 * and result (control-plane/reference/commands.ts); here the answer is the envelope with whatever
 * the command returns. A command may refuse with any code of the catalogue.
 */
const commandSchema = routeSchema({
  tags: ['Commands'],
  summary: 'Run a revision command',
  description:
    "The params are the JSON body (up to 8 MiB); `upload_records` also takes JSON Lines. `read` on the revision's blob, then the command's role.",
  params: pathParams,
  body: z.record(z.string(), z.unknown()),
  responses: {
    200: z
      .looseObject({ status: z.string() })
      .meta({ description: 'The command\'s fields beside `status` ("success", or check_definition\'s verdict).' }),
  },
  errors: Object.keys(errorCatalog) as ErrorCode[],
});

export interface CommandRoutesOptions {
  /** The registry the WebSocket endpoint uses too, so both transports answer alike. */
  commands?: CommandRegistry;
}

/**
 * `POST /v1/revisions/:revision_id/:command` with the params as the JSON body: the REST transport
 * of the revision commands (docs/commands.md, "REST"). Only commands a revision answers are
 * reachable here; `get_user` and the like are JSON-RPC methods with REST routes of their own.
 */
export async function commandRoutes(app: FastifyInstance, options: CommandRoutesOptions): Promise<void> {
  const ctx = app.ctx;
  const registry = options.commands ?? createCommandRegistry(COMMANDS);

  // `upload_records` also takes its records as JSON Lines (docs/blob-types.md); the text is parsed
  // by the route, so the command sees the same params either way. The bytes are held to the JSON
  // bodies' rule (UTF-8, not decoded into U+FFFD and stored so), the records to their guard.
  app.addContentTypeParser(
    JSON_LINES_TYPES,
    { parseAs: 'buffer', bodyLimit: COMMAND_MESSAGE_LIMIT },
    (_request, body, done) => {
      const bytes = body as Buffer;
      if (!isUtf8(bytes))
        return done(new ServiceError('invalid_request_body', 'The body is not valid UTF-8.'), undefined);
      done(null, new JsonLinesBody(bytes.toString('utf8')));
    },
  );

  app.post(
    '/revisions/:revision_id/:command',
    { bodyLimit: COMMAND_MESSAGE_LIMIT, schema: commandSchema, config: { heavyBody: true } },
    async (request, reply) => {
      const { revision_id, command } = parseInput(pathParams, request.params, 'path');
      let body = request.body;
      if (body instanceof JsonLinesBody) {
        if (command !== JSON_LINES_COMMAND)
          throw new ServiceError(
            'invalid_request_body',
            'A JSON Lines body is accepted by upload_records only; send JSON.',
          );
        body = { records: jsonLinesRecords(body.text) };
      }
      // A body-less POST is a command without params; anything else must be an object (the registry checks).
      // A creating command takes the `Idempotency-Key` header (docs/commands.md); others ignore it.
      const result = await runRevisionCommand(registry, ctx, request.principal, revision_id, command, body ?? {}, {
        idempotencyKey: request.headers[IDEMPOTENCY_HEADER],
        onReplayed: () => {
          reply.header(REPLAYED_HEADER, 'true');
        },
      });
      // `ok` puts `status` first, so a result's own `status` (check_definition's verdict) wins.
      return ok(result);
    },
  );
}
