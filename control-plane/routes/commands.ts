import type { FastifyInstance, FastifyRequest } from 'fastify';
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
import { ok, PiecedAnswer } from '../reply.ts';
import { routeSchema } from '../openapi/route-schema.ts';
import { errorCatalog, type ErrorCode } from '../../shared/errors.ts';
import { ServiceError } from '../../shared/errors.ts';
import { jsonLinesRecords, uploadRecordsParams } from '../commands/nlp-record-checks.ts';
import { uploadSessionObjectParams } from '../commands/session-object-params.ts';
import { PreparedJson, RawJson } from '../../shared/prepared-json.ts';
import { randomUUID } from 'node:crypto';
import type { BodyThreads } from '../bodies/body-threads.ts';
import type { BodyResult, RecordLiterals, Refused } from '../bodies/body-messages.ts';
import { PreparedParams, PreparedRecords } from '../bodies/prepared.ts';
import { guardedJson } from '../bodies/guarded-json.ts';
import { readBodyBytes } from '../bodies/body-bytes.ts';
import type { Readable } from 'node:stream';
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

/** A large JSON Lines body of `upload_records` as a body thread read it: its lines' refusal or its records. */
class PreparedLines {
  readonly #lines: Refused | { records: RecordLiterals | Refused };
  constructor(lines: Refused | { records: RecordLiterals | Refused }) {
    this.#lines = lines;
  }

  /** The params `{records}` the lines stand for; throws what jsonLinesRecords would have thrown. */
  params(): PreparedParams {
    if ('refusal' in this.#lines) throw new ServiceError('invalid_request_body', this.#lines.refusal);
    return new PreparedParams(uploadRecordsParams, { params: { records: new PreparedRecords(this.#lines.records) } });
  }
}

/** The params of a large JSON body, from what a body thread made of it. */
function jsonParams(result: BodyResult): unknown {
  switch (result.kind) {
    case 'refused':
      throw new ServiceError('invalid_request_body', result.refusal);
    case 'guarded': {
      // Guarded in the thread (prototype keys included): only the parse is left.
      const text = Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength).toString('utf8');
      return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
    }
    case 'records':
      return new PreparedParams(
        uploadRecordsParams,
        'refusal' in result.shell
          ? result.shell
          : { params: { ...result.shell.params, records: new PreparedRecords(result.records) } },
      );
    case 'object':
      return new PreparedParams(
        uploadSessionObjectParams,
        'refusal' in result.shell || result.json === null || result.answer === null
          ? result.shell
          : { params: { ...result.shell.params, value: new PreparedJson(result.json, result.answer) } },
      );
    case 'lines':
      throw new Error('a JSON Lines result for a JSON body');
  }
}

/** The type fastify gives an answer it serializes. */
const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The answer's bytes when its `object.value` is a body thread's text (RawJson, from
 * `upload_session_object`): the rest serialized as fastify would, the text spliced in, so the
 * event loop neither parses nor serializes the value; sent a piece per turn, not joined. Null for
 * any other answer.
 */
function withRawValue(answer: Record<string, unknown>): PiecedAnswer | null {
  const object = answer.object as Record<string, unknown> | undefined;
  if (typeof object !== 'object' || object === null || !(object.value instanceof RawJson)) return null;
  const mark = JSON.stringify(`raw-${randomUUID()}`);
  const text = JSON.stringify({ ...answer, object: { ...object, value: JSON.parse(mark) } });
  const at = text.indexOf(mark);
  return new PiecedAnswer([
    Buffer.from(text.slice(0, at)),
    object.value.bytes,
    Buffer.from(text.slice(at + mark.length)),
  ]);
}

/**
 * Whether a body thread may prepare the command's params: `upload_records` and
 * `upload_session_object`, unless the request carries an idempotency key (its fingerprint is
 * computed from the parsed params on the event loop).
 */
function preparable(command: string, request: FastifyRequest): boolean {
  if (command === 'upload_session_object') return true;
  return command === JSON_LINES_COMMAND && request.headers[IDEMPOTENCY_HEADER] === undefined;
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
  /** Where large bodies are read (control-plane/bodies/body-threads.ts); absent: on the event loop. */
  bodyThreads?: BodyThreads;
}

/**
 * `POST /v1/revisions/:revision_id/:command` with the params as the JSON body: the REST transport
 * of the revision commands (docs/commands.md, "REST"). Only commands a revision answers are
 * reachable here; `get_user` and the like are JSON-RPC methods with REST routes of their own.
 */
export async function commandRoutes(app: FastifyInstance, options: CommandRoutesOptions): Promise<void> {
  const ctx = app.ctx;
  const registry = options.commands ?? createCommandRegistry(COMMANDS);

  const threads = options.bodyThreads;
  const commandOf = (request: FastifyRequest) => String((request.params as { command?: unknown }).command ?? '');

  // The bytes are copied into one buffer as they arrive (control-plane/bodies/body-bytes.ts),
  // not joined at the end as fastify's `parseAs: 'buffer'` does, with fastify's refusals.
  const bytesOf = (request: FastifyRequest, payload: Readable) =>
    readBodyBytes(payload, request.headers['content-length'], COMMAND_MESSAGE_LIMIT);

  // JSON bodies as everywhere (control-plane/bodies/guarded-json.ts), a large one read by a body
  // thread: the event loop then never parses it, and for `upload_records` and
  // `upload_session_object` never holds its parsed records or value either.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { bodyLimit: COMMAND_MESSAGE_LIMIT },
    async (request: FastifyRequest, payload: Readable) => {
      const body = await bytesOf(request, payload);
      if (threads === undefined || !threads.takes(body.byteLength)) {
        const parsed = guardedJson(body);
        if ('refusal' in parsed) throw new ServiceError('invalid_request_body', parsed.refusal);
        return parsed.value;
      }
      const command = commandOf(request);
      const prepare = preparable(command, request);
      return jsonParams(await threads.read({ bytes: body, format: 'json', command, prepare }));
    },
  );

  // `upload_records` also takes its records as JSON Lines (docs/blob-types.md); the text is parsed
  // by the route, so the command sees the same params either way. The bytes are held to the JSON
  // bodies' rule (UTF-8, not decoded into U+FFFD and stored so), the records to their guard.
  app.addContentTypeParser(
    JSON_LINES_TYPES,
    { bodyLimit: COMMAND_MESSAGE_LIMIT },
    async (request: FastifyRequest, payload: Readable) => {
      const body = await bytesOf(request, payload);
      let bytes: Uint8Array = body;
      if (threads?.takes(body.byteLength)) {
        const command = commandOf(request);
        const result = await threads.read({
          bytes: body,
          format: 'json-lines',
          command,
          prepare: preparable(command, request),
        });
        if (result.kind === 'lines') return new PreparedLines(result.lines);
        if (result.kind === 'refused') throw new ServiceError('invalid_request_body', result.refusal);
        if (result.kind !== 'guarded') throw new Error(`a ${result.kind} result for a JSON Lines body`);
        bytes = result.bytes;
      } else if (!isUtf8(bytes)) {
        throw new ServiceError('invalid_request_body', 'The body is not valid UTF-8.');
      }
      return new JsonLinesBody(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
    },
  );

  app.post(
    '/revisions/:revision_id/:command',
    { bodyLimit: COMMAND_MESSAGE_LIMIT, schema: commandSchema, config: { heavyBody: true } },
    async (request, reply) => {
      const { revision_id, command } = parseInput(pathParams, request.params, 'path');
      let body = request.body;
      if (body instanceof JsonLinesBody || body instanceof PreparedLines) {
        if (command !== JSON_LINES_COMMAND)
          throw new ServiceError(
            'invalid_request_body',
            'A JSON Lines body is accepted by upload_records only; send JSON.',
          );
        body = body instanceof PreparedLines ? body.params() : { records: jsonLinesRecords(body.text) };
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
      const answer = ok(result);
      const spliced = withRawValue(answer);
      if (spliced === null) return answer;
      return reply.type(JSON_TYPE).header('content-length', spliced.byteLength).send(spliced);
    },
  );
}
