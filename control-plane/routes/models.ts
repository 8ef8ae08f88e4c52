/**
 * Upload Model and Download Model (docs/blob-types.md, "ONNX models"):
 * `PUT /v1/revisions/:revision_id/model` streams the bytes into a temporary file (never whole in
 * memory), hashing them on the way; ONNX Runtime then opens the file in a child process
 * (control-plane/models/inspect-model.ts), and one transaction copies it into a PostgreSQL large
 * object (or it is put to the S3 store). `GET` streams the bytes back out, a chunk a query.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { limitInForce } from '../../shared/limits/in-force.ts';
import { limitExceeded } from '../../shared/limits/index.ts';
import { parseInput } from '../../shared/validate.ts';
import { requireRole, revisionFor } from '../access/standing.ts';
import { REVISION_COLUMNS, type RevisionRow } from '../sql/revisions.ts';
import type { RevisionScope } from '../commands/command.ts';
import type { AppContext } from '../context.ts';
import { requireEntitlement } from '../limits/entitlement.ts';
import type { TensorSpec } from '../../shared/onnx/tensors.ts';
import { inspectModel, type Inspection } from '../models/inspect-model.ts';
import { QueueFullError } from '../../shared/fair-queue.ts';
import { RECLAIM_EVERY_BYTES, reclaimStreamBuffers } from '../models/reclaim.ts';
import type { S3Objects } from '../../shared/onnx/s3-objects.ts';
import { ok } from '../reply.ts';
import { binary, routeSchema, success } from '../openapi/route-schema.ts';
import { modelSchema, revisionSchema } from '../openapi/records.ts';
import { revisionRecord } from '../sql/revisions.ts';
import { FairQueue } from '../../shared/fair-queue.ts';
import { writeLargeObject } from '../../shared/db/large-objects.ts';
import { readLargeObjectChunk } from '../models/large-object-chunk.ts';

const pathParams = z.strictObject({ revision_id: refSchema });
const declaredSchema = z.strictObject({ size: z.number().int().nonnegative() });
const TAGS = ['Models'];

/** Bytes per large-object write and read. */
const CHUNK = 256 * 1024;

/**
 * Downloads' chunk reads in turns (shared/fair-queue.ts): two at once on this control plane, one
 * per organization, organizations taking turns. Each chunk read holds a pool connection while it
 * runs, and a download whose client reads nothing still reads ahead as far as the sockets'
 * kernel buffers take (megabytes on loopback): twenty such downloads once held all twenty pool
 * connections with their reads, and every other request waited for one.
 */
const CHUNK_TURNS = { concurrency: 2, perKey: 1, maxWaitingPerKey: 1024 };

interface ModelRow {
  size: number;
  sha256: string;
  oid: number | null;
  object_key: string | null;
  inputs: TensorSpec[] | null;
  outputs: TensorSpec[] | null;
  error: string | null;
}

/** The model record of responses: `{size, sha256, inputs, outputs}` (and `error` for a failed one). */
function modelRecord(row: ModelRow): Record<string, unknown> {
  return row.error === null
    ? { size: row.size, sha256: row.sha256, inputs: row.inputs, outputs: row.outputs }
    : { size: row.size, sha256: row.sha256, error: row.error };
}

/** The revision of an ONNX blob, the caller holding `role` on it (404 / 403 otherwise). */
async function modelScope(ctx: AppContext, request: FastifyRequest, role: 'read' | 'write'): Promise<RevisionScope> {
  const { revision_id } = parseInput(pathParams, request.params, 'path');
  const scope = await revisionFor(ctx.db, request.principal, revision_id, 'read');
  if (scope.blob.type !== 'svc.model.onnx')
    throw new ServiceError('not_found', `A ${scope.blob.type} revision has no model.`);
  requireRole(scope.role, role, 'revision');
  return scope;
}

/** `X-Request-Body: {"size": <bytes>}`, the declared size of the upload. */
function declaredSize(request: FastifyRequest): number {
  const raw = request.headers['x-request-body'];
  if (typeof raw !== 'string' || raw.length === 0)
    throw new ServiceError('invalid_request_body', 'The X-Request-Body header is required: {"size": <bytes>} as JSON.');
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw new ServiceError('invalid_request_body', 'The X-Request-Body header is not valid JSON.');
  }
  return parseInput(declaredSchema, value, 'X-Request-Body').size;
}

interface PendingUpload {
  scope: RevisionScope;
  size: number;
}

export async function modelRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;
  const chunkTurns = new FairQueue(CHUNK_TURNS);

  await app.register(async (upload) => {
    const pending = new WeakMap<FastifyRequest, PendingUpload>();
    // The body is the model's bytes whatever its type, handed over as the raw stream: nothing
    // buffers it. Scoped to this plugin.
    upload.removeAllContentTypeParsers();
    upload.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

    upload.put(
      '/revisions/:revision_id/model',
      {
        schema: routeSchema({
          tags: TAGS,
          summary: 'Upload Model (ONNX)',
          description:
            'The body is the model\'s bytes, streamed; `X-Request-Body: {"size": <bytes>}` declares its length. ONNX Runtime opens it before the revision is ready. `write` on an ONNX revision; checks `onnx.enabled` and `onnx.model_bytes`.',
          params: pathParams,
          headers: z.object({
            'x-request-body': z
              .string()
              .meta({ description: `JSON: ${JSON.stringify(z.toJSONSchema(declaredSchema, { io: 'input' }))}` }),
          }),
          body: z.string().meta({ format: 'binary' }),
          consumes: ['application/octet-stream'],
          responses: {
            200: success({ revision: revisionSchema, model: modelSchema }, 'The revision, now ready, and its model.'),
          },
          errors: ['not_found', 'forbidden', 'invalid_model', 'limit_exceeded', 'conflict'],
        }),
        // Everything that can refuse the upload is decided before a byte of the body is read; a
        // refusal then closes the connection instead of draining a body of hundreds of megabytes.
        async preParsing(request, reply, payload) {
          reply.header('connection', 'close');
          const scope = await modelScope(ctx, request, 'write');
          const size = declaredSize(request);
          await requireEntitlement(ctx.db, scope.blob.id, 'onnx.enabled');
          const ceiling = await limitInForce(ctx.db, { blobId: scope.blob.id }, 'onnx.model_bytes');
          if (typeof ceiling.value === 'number' && size > ceiling.value) throw limitExceeded(ceiling);
          pending.set(request, { scope, size });
          reply.removeHeader('connection');
          return payload;
        },
      },
      async (request, reply) => {
        const { scope, size: declared } = pending.get(request)!;
        const body = request.body as Readable;
        const file = join(tmpdir(), `ws-model-${randomUUID()}.onnx`);
        try {
          // The client's pace is paid for with a socket and a temporary file only: no pool
          // connection, no transaction and no row lock is taken before the whole body is here.
          const spooled = await spoolBody(body, declared, file, ctx.config.models);
          if ('refusal' in spooled) {
            reply.header('connection', 'close');
            throw spooled.refusal;
          }
          const inspection = await inspectModel(file, scope.org.id, ctx.config.models.maxNodes).catch(
            (error: unknown) => {
              if (!(error instanceof QueueFullError)) throw error;
              reply.header('retry-after', '5');
              throw new ServiceError(
                'rate_limited',
                `Too many uploads of this organization are waiting to be opened (${error.waiting}); try again in 5 s.`,
              );
            },
          );
          const row = await recordModel(ctx, scope, file, spooled, inspection);
          if (row.model.error !== null) {
            throw new ServiceError(
              'invalid_model',
              `ONNX Runtime could not open the model, so the revision is failed: ${row.model.error}`,
            );
          }
          return ok({ revision: revisionRecord(row.revision), model: modelRecord(row.model) });
        } finally {
          await rm(file, { force: true });
        }
      },
    );
  });

  app.get(
    '/revisions/:revision_id/model',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Download Model',
        description:
          'The bytes, streamed; `X-Response-Body: {"status":"success","size","sha256"}`. `read`; checks `onnx.enabled`.',
        params: pathParams,
        responses: { 200: binary("The model's bytes.") },
        errors: ['not_found', 'forbidden', 'limit_exceeded'],
      }),
    },
    async (request, reply) => {
      const scope = await modelScope(ctx, request, 'read');
      await requireEntitlement(ctx.db, scope.blob.id, 'onnx.enabled');
      const { rows } = await ctx.db.query<ModelRow>(
        'SELECT size, sha256, oid, object_key, inputs, outputs, error FROM models WHERE revision_id = $1::uuid',
        [scope.revision.id],
      );
      const model = rows[0];
      if (model === undefined || (model.oid === null && model.object_key === null))
        throw new ServiceError('not_found', 'This revision holds no model; upload one with PUT.');
      if (model.object_key !== null) {
        if (ctx.modelObjects === null)
          throw new ServiceError('not_found', 'The model is in an S3 store this process is not configured with.');
        return modelHeaders(reply, model).send(await ctx.modelObjects.get(model.object_key));
      }
      return sendModel(ctx, chunkTurns, scope.org.id, reply, model);
    },
  );
}

/** Where a model's bytes went: a large object, or an object of the S3 store. */
type Location = { oid: number } | { key: string };
/** A complete body in its temporary file, counted and hashed. */
type Spooled = { size: number; sha256: string } | { refusal: ServiceError };

/**
 * Counts and hashes the body on its way, refusing bytes past the declared size, a body that goes
 * `idleSeconds` without a byte, and one still arriving after `totalSeconds`.
 */
function meterFor(
  declared: number,
  hash: ReturnType<typeof createHash>,
  counted: { size: number },
  bounds: { uploadIdleSeconds: number; uploadSeconds: number },
): Transform {
  let reclaimedAt = 0;
  const stalled = (what: string) =>
    meter.destroy(new ServiceError('invalid_request_body', `The body ${what}; nothing was kept.`));
  const idle = () => stalled(`sent no byte for ${bounds.uploadIdleSeconds} s`);
  const idleTimer = setTimeout(idle, bounds.uploadIdleSeconds * 1000);
  const totalTimer = setTimeout(() => stalled(`took more than ${bounds.uploadSeconds} s`), bounds.uploadSeconds * 1000);
  const meter: Transform = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      idleTimer.refresh();
      counted.size += chunk.length;
      if (counted.size > declared)
        return callback(
          new ServiceError(
            'invalid_request_body',
            `The body is longer than the declared ${declared} bytes; nothing was kept.`,
          ),
        );
      hash.update(chunk);
      // The stream's spent buffers, every few megabytes (control-plane/models/reclaim.ts).
      if (counted.size - reclaimedAt >= RECLAIM_EVERY_BYTES) {
        reclaimedAt = counted.size;
        reclaimStreamBuffers();
      }
      callback(null, chunk);
    },
    destroy(error, callback) {
      clearTimeout(idleTimer);
      clearTimeout(totalTimer);
      callback(error);
    },
    flush(callback) {
      clearTimeout(idleTimer);
      clearTimeout(totalTimer);
      callback();
    },
  });
  idleTimer.unref();
  totalTimer.unref();
  return meter;
}

function shortBody(size: number, declared: number): ServiceError {
  return new ServiceError(
    'invalid_request_body',
    `The body is ${size} bytes, not the declared ${declared}; nothing was kept.`,
  );
}

/**
 * Streams the body into `file`, counting and hashing; keeps only a body of exactly the declared
 * size, arriving within the upload's bounds. A body longer or shorter than declared, one that
 * stalls, or a connection dropped mid-way is refused. Nothing of the database is held meanwhile.
 */
async function spoolBody(
  body: Readable,
  declared: number,
  file: string,
  bounds: { uploadIdleSeconds: number; uploadSeconds: number },
): Promise<Spooled> {
  const hash = createHash('sha256');
  const counted = { size: 0 };
  try {
    await pipeline(body, meterFor(declared, hash, counted, bounds), createWriteStream(file));
  } catch (error) {
    body.destroy();
    if (error instanceof ServiceError) return { refusal: error };
    // The client went away mid-upload (the message is the stream's, never a path of ours).
    return { refusal: new ServiceError('invalid_request_body', 'The upload did not complete; nothing was kept.') };
  }
  if (counted.size !== declared) return { refusal: shortBody(counted.size, declared) };
  return { size: counted.size, sha256: hash.digest('hex') };
}

/**
 * Records what the upload came to: for a model that opened, its bytes (copied from the temporary
 * file into a large object inside the transaction, or put to the S3 store before it) and its
 * inputs and outputs, the revision `ready`; for one that did not, no bytes and the reason, the
 * revision `failed`. The transaction (and the revision's row lock, so uploads of one revision
 * queue) lasts as long as a copy from local disk, never a client's pace.
 */
async function recordModel(
  ctx: AppContext,
  scope: RevisionScope,
  file: string,
  spooled: { size: number; sha256: string },
  inspection: Inspection,
): Promise<{ revision: RevisionRow; model: ModelRow }> {
  const failed = 'error' in inspection;
  const key = !failed && ctx.modelObjects !== null ? await putToS3(ctx.modelObjects, scope, file) : null;
  try {
    return await ctx.db.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM revisions WHERE id = $1::uuid FOR NO KEY UPDATE', [scope.revision.id]);
      let location: Location | null = key === null ? null : { key };
      if (!failed && key === null) {
        location = { oid: await writeLargeObject(tx, createReadStream(file, { highWaterMark: CHUNK })) };
      }
      const { rows: models } = await tx.query<ModelRow>(
        `INSERT INTO models (revision_id, oid, object_key, size, sha256, inputs, outputs, error)
         VALUES ($1::uuid, $2::oid, $3, $4, $5, $6::jsonb, $7::jsonb, $8)
         ON CONFLICT (revision_id) DO UPDATE SET oid = EXCLUDED.oid, object_key = EXCLUDED.object_key, size = EXCLUDED.size,
           sha256 = EXCLUDED.sha256, inputs = EXCLUDED.inputs, outputs = EXCLUDED.outputs, error = EXCLUDED.error, created_at = now()
         RETURNING size, sha256, oid, object_key, inputs, outputs, error`,
        [
          scope.revision.id,
          location !== null && 'oid' in location ? location.oid : null,
          location !== null && 'key' in location ? location.key : null,
          spooled.size,
          spooled.sha256,
          failed ? null : JSON.stringify(inspection.inputs),
          failed ? null : JSON.stringify(inspection.outputs),
          failed ? inspection.error : null,
        ],
      );
      const { rows: revisions } = await tx.query<RevisionRow>(
        `UPDATE revisions r SET status = $2 WHERE r.id = $1::uuid RETURNING ${REVISION_COLUMNS}`,
        [scope.revision.id, failed ? 'failed' : 'ready'],
      );
      return { revision: revisions[0]!, model: models[0]! };
    });
  } catch (error) {
    if (key !== null) await ctx.modelObjects!.delete(key).catch(() => {});
    throw error;
  }
}

/** Puts the temporary file to the S3 store under a fresh key; a failed put leaves no object. */
async function putToS3(objects: S3Objects, scope: RevisionScope, file: string): Promise<string> {
  const key = objects.keyFor(scope.revision.id, randomUUID().slice(0, 8));
  const abort = new AbortController();
  try {
    await objects.put(key, createReadStream(file), abort.signal);
  } catch (error) {
    abort.abort();
    await objects.delete(key).catch(() => {});
    throw error;
  }
  return key;
}

/** The headers of Download Model: the bytes' type and length, and the envelope in `X-Response-Body`. */
function modelHeaders(reply: FastifyReply, model: ModelRow): FastifyReply {
  return reply
    .header('content-type', 'application/octet-stream')
    .header('content-length', String(model.size))
    .header('x-response-body', JSON.stringify({ status: 'success', size: model.size, sha256: model.sha256 }));
}

/**
 * Streams the large object to the reply one chunk at a time, each chunk its own short statement
 * (`lo_get`, answered in binary: control-plane/models/large-object-chunk.ts) on a pooled
 * connection given back at once: a client that reads slowly, or not at all, holds a socket and at most a chunk or two of buffer, never a connection. The stream reads the
 * next chunk only when the client has taken the last one, in `orgId`'s turn of `turns`, so all
 * downloads together hold at most two pool connections. A model replaced mid-download ends the
 * stream early (its large object is gone), so the client sees fewer bytes than `content-length`.
 */
function sendModel(
  ctx: AppContext,
  turns: FairQueue,
  orgId: string,
  reply: FastifyReply,
  model: ModelRow,
): FastifyReply {
  const oid = model.oid!;
  let offset = 0;
  const stream = new Readable({
    highWaterMark: CHUNK,
    read() {
      if (offset >= model.size) {
        this.push(null);
        return;
      }
      const length = Math.min(CHUNK, model.size - offset);
      turns
        .run(orgId, () =>
          // A download its client went away from reads nothing more, even after waiting its turn.
          this.destroyed ? Promise.resolve(null) : readLargeObjectChunk(ctx.db.pool, oid, offset, length),
        )
        .then((data) => {
          if (this.destroyed) return;
          if (!data || data.length === 0) throw new Error('the model changed during the download');
          offset += data.length;
          this.push(data);
        })
        .catch((error: unknown) => this.destroy(error as Error));
    },
  });
  reply.raw.once('close', () => {
    if (!stream.readableEnded) stream.destroy();
  });
  return modelHeaders(reply, model).send(stream);
}
