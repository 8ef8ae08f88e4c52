import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { parseInput } from '../../shared/validate.ts';
import { blobFor, revisionFor } from '../access/standing.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { metadataFields } from '../openapi/records.ts';
import { getMetadata, putMetadata, type MetadataRow } from '../sql/metadata.ts';

/** Nesting deeper than this is refused: PostgreSQL's jsonb and the JSON encoder recurse per level. */
const MAX_ENTRY_DEPTH = 64;

const blobParams = z.strictObject({ org_id: refSchema, blob_id: refSchema, alias: refSchema });
const revisionParams = z.strictObject({ id: refSchema, alias: refSchema });
/** The alias grammar applies where a listing is written, never where one is read. */
const putAlias = z.object({ alias: aliasSchema });
const putBody = z.strictObject({
  entries: z
    .array(z.unknown())
    .refine((entries) => depthWithin(entries, MAX_ENTRY_DEPTH), `entries nest deeper than ${MAX_ENTRY_DEPTH} levels`),
});

/** Iterative, so a hostile body cannot overflow the stack while it is being measured. */
function depthWithin(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > max) return false;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return true;
}

const TAGS = ['Metadata'];
const listingReply = success(metadataFields, 'The listing.');

function listing(row: MetadataRow | undefined): Record<string, unknown> {
  if (!row) throw new ServiceError('not_found', 'No metadata is stored under that alias.');
  return { alias: row.alias, entries: row.entries, updated_at: row.updated_at };
}

/** Metadata listings of blobs and revisions: JSON entries stored under an alias (docs/resources.md, "Metadata listings"). */
export async function metadataRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.get(
    '/blobs/:org_id/:blob_id/metadata/:alias',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: "Get a blob's metadata listing",
        params: blobParams,
        responses: { 200: listingReply },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const params = parseInput(blobParams, request.params, 'path');
      const { blob } = await blobFor(ctx.db, request.principal, params.org_id, params.blob_id, 'read');
      return ok(listing(await getMetadata(ctx.db, { kind: 'blob', id: blob.id }, params.alias)));
    },
  );

  app.put(
    '/blobs/:org_id/:blob_id/metadata/:alias',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: "Store a blob's metadata listing",
        description: '`write`.',
        params: blobParams,
        body: putBody,
        responses: { 200: listingReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const params = parseInput(blobParams, request.params, 'path');
      const { alias } = parseInput(putAlias, params, 'path');
      const { entries } = parseInput(putBody, request.body ?? {});
      const { blob } = await blobFor(ctx.db, request.principal, params.org_id, params.blob_id, 'write');
      return ok(listing(await putMetadata(ctx.db, { kind: 'blob', id: blob.id }, alias, entries)));
    },
  );

  app.get(
    '/revisions/:id/metadata/:alias',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: "Get a revision's metadata listing",
        params: revisionParams,
        responses: { 200: listingReply },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const params = parseInput(revisionParams, request.params, 'path');
      const { revision } = await revisionFor(ctx.db, request.principal, params.id, 'read');
      return ok(listing(await getMetadata(ctx.db, { kind: 'revision', id: revision.id }, params.alias)));
    },
  );

  app.put(
    '/revisions/:id/metadata/:alias',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: "Store a revision's metadata listing",
        description: '`write` on its blob.',
        params: revisionParams,
        body: putBody,
        responses: { 200: listingReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const params = parseInput(revisionParams, request.params, 'path');
      const { alias } = parseInput(putAlias, params, 'path');
      const { entries } = parseInput(putBody, request.body ?? {});
      const { revision } = await revisionFor(ctx.db, request.principal, params.id, 'write');
      return ok(listing(await putMetadata(ctx.db, { kind: 'revision', id: revision.id }, alias, entries)));
    },
  );
}
