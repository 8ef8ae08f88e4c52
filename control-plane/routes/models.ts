/**
 * Upload Model and Download Model (docs/blob-types.md, "ONNX models"):
 * `PUT /v1/revisions/:revision_id/model` streams the bytes into a PostgreSQL large object and a
 * temporary file at once (never whole in memory), hashing them on the way; ONNX Runtime then opens
 * the file in a child process (control-plane/models/inspect-model.ts). `GET` streams the bytes
 * back out of the large object.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Transform, Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import LargeObjectManager from 'pg-large-object/lib/LargeObjectManager.js';
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
import { inspectModel, type TensorSpec } from '../models/inspect-model.ts';
import { RECLAIM_EVERY_BYTES, reclaimStreamBuffers } from '../models/reclaim.ts';
import type { S3Objects } from '../../shared/onnx/s3-objects.ts';
import { ok } from '../reply.ts';
import { binary, routeSchema, success } from '../openapi/route-schema.ts';
import { modelSchema, revisionSchema } from '../openapi/records.ts';
import { revisionRecord } from '../sql/revisions.ts';

const pathParams = z.strictObject({ revision_id: refSchema });
const declaredSchema = z.strictObject({ size: z.number().int().nonnegative() });
const TAGS = ['Models'];

/** Bytes per large-object write and read. */
const CHUNK = 256 * 1024;

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

function writeTo(stream: NodeJS.WritableStream, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    stream.once('error', onError);
    const flushed = stream.write(chunk, () => {
      stream.off('error', onError);
      if (flushed) resolve();
    });
    if (!flushed) stream.once('drain', () => resolve());
  });
}

function endOf(stream: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.once('error', reject);
    stream.once('finish', () => resolve());
    stream.end();
  });
}

interface PendingUpload {
  scope: RevisionScope;
  size: number;
}

export async function modelRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

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
          const stored = await storeUpload(ctx, scope, body, declared, file);
          if ('refusal' in stored) {
            reply.header('connection', 'close');
            throw stored.refusal;
          }
          const inspection = await inspectModel(file);
          const failed = 'error' in inspection;
          const row = await ctx.db.transaction(async (tx) => {
            // A model that did not open keeps none of its bytes; the revision says why it failed.
            if (failed) {
              if ('oid' in stored.location) await tx.query('SELECT lo_unlink($1::oid)', [stored.location.oid]);
              else
                await tx.query('INSERT INTO model_object_deletions (object_key) VALUES ($1) ON CONFLICT DO NOTHING', [
                  stored.location.key,
                ]);
            }
            const kept = failed ? {} : stored.location;
            const { rows: models } = await tx.query<ModelRow>(
              `INSERT INTO models (revision_id, oid, object_key, size, sha256, inputs, outputs, error)
             VALUES ($1::uuid, $2::oid, $3, $4, $5, $6::jsonb, $7::jsonb, $8)
             ON CONFLICT (revision_id) DO UPDATE SET oid = EXCLUDED.oid, object_key = EXCLUDED.object_key, size = EXCLUDED.size,
               sha256 = EXCLUDED.sha256, inputs = EXCLUDED.inputs, outputs = EXCLUDED.outputs, error = EXCLUDED.error, created_at = now()
             RETURNING size, sha256, oid, object_key, inputs, outputs, error`,
              [
                scope.revision.id,
                'oid' in kept ? kept.oid : null,
                'key' in kept ? kept.key : null,
                stored.size,
                stored.sha256,
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
      return sendModel(ctx, reply, model);
    },
  );
}

/** Where an upload's bytes went: a large object, or an object of the S3 store. */
type Location = { oid: number } | { key: string };
type Stored = { location: Location; size: number; sha256: string } | { refusal: ServiceError };

/** Counts and hashes the body on its way, refusing bytes past the declared size. */
function meterFor(declared: number, hash: ReturnType<typeof createHash>, counted: { size: number }): Transform {
  let reclaimedAt = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
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
  });
}

/** Writes every chunk to each of `targets`, at the pace of the slowest. */
function teeTo(targets: NodeJS.WritableStream[]): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      Promise.all(targets.map((target) => writeTo(target, chunk))).then(() => callback(), callback);
    },
    final(callback) {
      Promise.all(targets.map((target) => endOf(target))).then(() => callback(), callback);
    },
  });
}

function shortBody(size: number, declared: number): ServiceError {
  return new ServiceError(
    'invalid_request_body',
    `The body is ${size} bytes, not the declared ${declared}; nothing was kept.`,
  );
}

/**
 * Streams the body into the model store and `file` at once, counting and hashing; keeps only a
 * body of exactly the declared size. A body longer or shorter than declared, or a connection
 * dropped mid-way, keeps nothing: a large object is written in the upload's transaction and rolls
 * back with it; an S3 upload is aborted, or its object deleted.
 */
async function storeUpload(
  ctx: AppContext,
  scope: RevisionScope,
  body: Readable,
  declared: number,
  file: string,
): Promise<Stored> {
  try {
    if (ctx.modelObjects !== null) return await storeInS3(ctx.modelObjects, scope, body, declared, file);
    return await ctx.db.transaction(async (tx) => {
      // One upload of a revision at a time.
      await tx.query('SELECT 1 FROM revisions WHERE id = $1::uuid FOR NO KEY UPDATE', [scope.revision.id]);
      const manager = new LargeObjectManager({ pg: tx.client });
      const [oid, lo] = (await manager.createAndWritableStreamAsync(CHUNK)) as [number, NodeJS.WritableStream];
      const out = createWriteStream(file);
      const hash = createHash('sha256');
      const counted = { size: 0 };
      try {
        await pipeline(body, meterFor(declared, hash, counted), teeTo([lo, out]));
      } catch (error) {
        out.destroy();
        throw error;
      }
      if (counted.size !== declared) throw shortBody(counted.size, declared);
      return { location: { oid }, size: counted.size, sha256: hash.digest('hex') };
    });
  } catch (error) {
    if (error instanceof ServiceError) return { refusal: error };
    // The client went away mid-upload: nothing was kept.
    return {
      refusal: new ServiceError(
        'invalid_request_body',
        `The upload did not complete (${(error as Error).message}); nothing was kept.`,
      ),
    };
  }
}

async function storeInS3(
  objects: S3Objects,
  scope: RevisionScope,
  body: Readable,
  declared: number,
  file: string,
): Promise<Stored> {
  const key = objects.keyFor(scope.revision.id, randomUUID().slice(0, 8));
  const out = createWriteStream(file);
  const toS3 = new PassThrough();
  const abort = new AbortController();
  const hash = createHash('sha256');
  const counted = { size: 0 };
  const sending = objects.put(key, toS3, abort.signal);
  try {
    await pipeline(body, meterFor(declared, hash, counted), teeTo([out, toS3]));
    await sending;
  } catch (error) {
    abort.abort();
    toS3.destroy();
    out.destroy();
    await sending.catch(() => {});
    await objects.delete(key).catch(() => {});
    throw error;
  }
  if (counted.size !== declared) {
    await objects.delete(key).catch(() => {});
    throw shortBody(counted.size, declared);
  }
  return { location: { key }, size: counted.size, sha256: hash.digest('hex') };
}

/** The headers of Download Model: the bytes' type and length, and the envelope in `X-Response-Body`. */
function modelHeaders(reply: FastifyReply, model: ModelRow): FastifyReply {
  return reply
    .header('content-type', 'application/octet-stream')
    .header('content-length', String(model.size))
    .header('x-response-body', JSON.stringify({ status: 'success', size: model.size, sha256: model.sha256 }));
}

/**
 * Streams the large object to the reply inside a read transaction held until the last byte is
 * sent (or the client leaves), with `X-Response-Body: {status, size, sha256}`.
 */
async function sendModel(ctx: AppContext, reply: FastifyReply, model: ModelRow): Promise<FastifyReply> {
  const client = await ctx.db.pool.connect();
  let released = false;
  const release = async (ok: boolean) => {
    if (released) return;
    released = true;
    await client.query(ok ? 'COMMIT' : 'ROLLBACK').catch(() => {});
    client.release();
  };
  try {
    await client.query('BEGIN READ ONLY');
    const manager = new LargeObjectManager({ pg: client });
    const [, stream] = (await manager.openAndReadableStreamAsync(model.oid!, CHUNK)) as [number, Readable];
    stream.once('end', () => void release(true));
    stream.once('error', () => void release(false));
    reply.raw.once('close', () => {
      if (!stream.readableEnded) stream.destroy();
      void release(stream.readableEnded);
    });
    return modelHeaders(reply, model).send(stream);
  } catch (error) {
    await release(false);
    throw error;
  }
}
