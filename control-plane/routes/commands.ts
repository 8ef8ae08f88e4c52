import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { refSchema } from '../../shared/ids.ts';
import { parseInput } from '../../shared/validate.ts';
import { COMMAND_MESSAGE_LIMIT, COMMANDS, createCommandRegistry, runRevisionCommand, type CommandRegistry } from '../commands/registry.ts';
import { ok } from '../reply.ts';
import { ServiceError } from '../../shared/errors.ts';
import { jsonLinesRecords } from '../commands/nlp-records.ts';

const JSON_LINES_TYPES = ['application/x-ndjson', 'application/jsonl', 'application/jsonlines'];

/** A JSON Lines request body, as text until the route knows the command. */
class JsonLinesBody {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const pathParams = z.strictObject({ revision_id: refSchema, command: z.string().min(1).max(200) });

export interface CommandRoutesOptions {
  /** The registry the WebSocket endpoint uses too, so both transports answer alike. */
  commands?: CommandRegistry;
}

/**
 * `POST /v1/revisions/:revision_id/:command` with the params as the JSON body (contract §8): the
 * REST transport of the revision commands. Only commands a revision answers are reachable here;
 * `get_user` and the like are JSON-RPC methods with REST routes of their own.
 */
export async function commandRoutes(app: FastifyInstance, options: CommandRoutesOptions): Promise<void> {
  const ctx = app.ctx;
  const registry = options.commands ?? createCommandRegistry(COMMANDS);

  // `upload_records` also takes its records as JSON Lines (docs/blob-types.md); the text is parsed
  // by the route, so the command sees the same params either way.
  app.addContentTypeParser(JSON_LINES_TYPES, { parseAs: 'string', bodyLimit: COMMAND_MESSAGE_LIMIT }, (_request, body, done) => {
    done(null, new JsonLinesBody(body as string));
  });

  app.post('/revisions/:revision_id/:command', { bodyLimit: COMMAND_MESSAGE_LIMIT }, async (request) => {
    const { revision_id, command } = parseInput(pathParams, request.params, 'path');
    let body = request.body;
    if (body instanceof JsonLinesBody) {
      if (command !== 'upload_records') throw new ServiceError('invalid_request_body', 'A JSON Lines body is accepted by upload_records only; send JSON.');
      body = { records: jsonLinesRecords(body.text) };
    }
    // A body-less POST is a command without params; anything else must be an object (the registry checks).
    const result = await runRevisionCommand(registry, ctx, request.principal, revision_id, command, body ?? {});
    // `ok` puts `status` first, so a result's own `status` (check_definition's verdict) wins.
    return ok(result);
  });
}
