import { limitInForce } from '../../shared/limits/in-force.ts';
import { takeSlot } from '../../shared/limits/holdings.ts';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { BLOB_TYPES, isBlobType } from '../../shared/blob-types.ts';
import { decodeCursor, encodeCursor, keysetPage, parseQueryLimit } from '../../shared/cursor.ts';
import type { Tx } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid, refSchema } from '../../shared/ids.ts';
import { parseInput } from '../../shared/validate.ts';
import { blobFor, revisionFor } from '../access/standing.ts';
import type { AppContext } from '../context.ts';
import { recordCount } from '../sql/nlp-records.ts';
import { openedModel } from '../sql/models.ts';
import { sendCreated } from '../idempotency/idempotent.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { revisionDetailSchema, revisionSchema } from '../openapi/records.ts';
import { lockBlobByRef, type BlobRow } from '../sql/blobs.ts';
import {
  copyRevisionContent,
  countRevisions,
  deleteRevision,
  findBlobRevision,
  insertNextRevision,
  listRevisions,
  revisionHeld,
  revisionRecord,
  type RevisionRow,
} from '../sql/revisions.ts';

/** The listing name List Revisions' cursors are bound to. */
const LISTING = 'revisions';
/** Default 50, maximum 200, out of range refused (docs/resources.md, "List Revisions"). */
const LIMIT_RANGE = { fallback: 50, max: 200 };

const blobParams = z.strictObject({ org_id: refSchema, blob_id: refSchema });
const idParams = z.strictObject({ id: refSchema });
const createBody = z.strictObject({ copy_from: z.string().min(1).max(200).optional() });
const listQuery = z.strictObject({
  cursor: z.string().optional(),
  // Checked by parseQueryLimit so that every malformed limit is `invalid_limit`, not a query error.
  limit: z.unknown().optional(),
});
/** A List Revisions position: the number of the last revision returned. */
const position = z.number().int().nonnegative();

const TAGS = ['Revisions'];
const revisionReply = success({ revision: revisionSchema }, 'The revision.');

/**
 * Where Create Revision's limit (`platform.revisions_per_blob`) is checked. It runs under the
 * blob's row lock inside the creating transaction.
 */
async function checkRevisionCreation(_ctx: AppContext, tx: Tx, blob: BlobRow): Promise<void> {
  const inForce = await limitInForce(tx, { blobId: blob.id }, 'platform.revisions_per_blob');
  await takeSlot(tx, 'platform.revisions_per_blob', blob.id, inForce);
}

/** Revisions: create (optionally copying one), list with an opaque cursor, read, delete (docs/resources.md, "Revisions"). */
export async function revisionRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.post(
    '/blobs/:org_id/:blob_id/revisions',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Create a revision, optionally copying one of the same blob',
        description: '`write`; checks `platform.revisions_per_blob`; 409 for a second scheduler revision.',
        params: blobParams,
        body: createBody,
        idempotent: true,
        responses: { 201: revisionReply },
        errors: ['not_found', 'forbidden', 'conflict', 'limit_exceeded'],
      }),
    },
    async (request, reply) => {
      const { org_id, blob_id } = parseInput(blobParams, request.params, 'path');
      const body = parseInput(createBody, request.body ?? {});
      const principal = request.principal;
      return sendCreated(ctx, request, reply, { org_id, blob_id, body }, async (tx) => {
        // The lock serialises creations on this blob, so `max + 1` never collides.
        await lockBlobByRef(tx, org_id, blob_id);
        const { blob } = await blobFor(tx, principal, org_id, blob_id, 'write');
        if (isBlobType(blob.type) && BLOB_TYPES[blob.type].singleRevision && (await countRevisions(tx, blob.id)) > 0) {
          throw new ServiceError('conflict', `A ${blob.type} blob has exactly one revision.`);
        }
        let source: RevisionRow | undefined;
        if (body.copy_from !== undefined) {
          source = isUuid(body.copy_from) ? await findBlobRevision(tx, blob.id, body.copy_from) : undefined;
          if (!source) throw new ServiceError('not_found', 'copy_from names no revision of this blob.');
        }
        await checkRevisionCreation(ctx, tx, blob);
        const revision = await insertNextRevision(tx, blob.id);
        if (source) await copyRevisionContent(tx, source.id, revision.id);
        return { status: 201, body: ok({ revision: revisionRecord(revision) }) };
      });
    },
  );

  app.get(
    '/blobs/:org_id/:blob_id/revisions',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: "List a blob's revisions",
        description: 'Ascending `number`; `limit` 1..200, default 50; `cursor` is opaque, null on the last page.',
        params: blobParams,
        querystring: listQuery,
        responses: {
          200: success({ revisions: z.array(revisionSchema), cursor: z.string().nullable() }, 'A page of revisions.'),
        },
        errors: ['not_found', 'invalid_cursor', 'invalid_limit'],
      }),
    },
    async (request) => {
      const { org_id, blob_id } = parseInput(blobParams, request.params, 'path');
      const query = parseInput(listQuery, request.query ?? {}, 'query');
      const limit = parseQueryLimit(query.limit, LIMIT_RANGE);
      const { blob } = await blobFor(ctx.db, request.principal, org_id, blob_id, 'read');
      // Bound to this blob: a cursor from another blob's listing is refused, not resumed.
      const filters = { blob_id: blob.id };
      let after = 0;
      if (query.cursor !== undefined) {
        const decoded = position.safeParse(decodeCursor(ctx.config.secrets.CURSOR_KEY, LISTING, filters, query.cursor));
        if (!decoded.success) throw new ServiceError('invalid_cursor');
        after = decoded.data;
      }
      const { page, last, more } = keysetPage(await listRevisions(ctx.db, blob.id, after, limit), limit);
      return ok({
        revisions: page.map(revisionRecord),
        cursor: more && last ? encodeCursor(ctx.config.secrets.CURSOR_KEY, LISTING, filters, last.number) : null,
      });
    },
  );

  app.get(
    '/revisions/:id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Get a revision with what it holds',
        params: idParams,
        responses: { 200: success({ revision: revisionDetailSchema }, 'The revision.') },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { id } = parseInput(idParams, request.params, 'path');
      const { revision, blob } = await revisionFor(ctx.db, request.principal, id, 'read');
      const counts =
        blob.type === 'svc.dataset.nlp' ? { counts: { records: await recordCount(ctx.db, revision.id) } } : {};
      // An ONNX revision's model as its upload answered: what a client needs to call run_model.
      const model = blob.type === 'svc.model.onnx' ? { model: await openedModel(ctx.db, revision.id) } : {};
      return ok({
        revision: {
          ...revisionRecord(revision),
          held: await revisionHeld(ctx.db, revision.id, blob.type),
          ...counts,
          ...model,
        },
      });
    },
  );

  app.delete(
    '/revisions/:id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Delete a revision',
        description: '`write` on its blob.',
        params: idParams,
        responses: { 200: revisionReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const { id } = parseInput(idParams, request.params, 'path');
      const principal = request.principal;
      const revision = await ctx.db.transaction(async (tx) => {
        const { revision } = await revisionFor(tx, principal, id, 'write');
        const deleted = await deleteRevision(tx, revision.id);
        if (!deleted) throw new ServiceError('not_found', 'No such revision.');
        return deleted;
      });
      return ok({ revision: revisionRecord(revision) });
    },
  );
}
