import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { parseInput } from '../../shared/validate.ts';
import { blobFor, revisionFor } from '../access/standing.ts';
import type { Principal } from '../auth/principal.ts';
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

/** What a listing belongs to, as metadata rows name it. */
interface Holder {
  kind: 'blob' | 'revision';
  id: string;
}

/**
 * The GET and PUT of one kind of holder's listings under `path`: `find` resolves the path's
 * parameters to the holder the principal may `read` (GET) or `write` (PUT), or refuses.
 */
function listingRoutes<P extends z.ZodType<{ alias: string }>>(
  app: FastifyInstance,
  spec: {
    path: string;
    params: P;
    /** "blob" or "revision", for the summaries. */
    noun: string;
    /** The access a PUT needs, in words, for the reference. */
    writeNeeds: string;
    find(principal: Principal, params: z.infer<P>, level: 'read' | 'write'): Promise<Holder>;
  },
): void {
  const { path, params: paramsSchema, noun, writeNeeds, find } = spec;
  app.get(
    path,
    {
      schema: routeSchema({
        tags: TAGS,
        summary: `Get a ${noun}'s metadata listing`,
        params: paramsSchema,
        responses: { 200: listingReply },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const params = parseInput(paramsSchema, request.params, 'path');
      const holder = await find(request.principal, params, 'read');
      return ok(listing(await getMetadata(app.ctx.db, holder, params.alias)));
    },
  );
  app.put(
    path,
    {
      schema: routeSchema({
        tags: TAGS,
        summary: `Store a ${noun}'s metadata listing`,
        description: writeNeeds,
        params: paramsSchema,
        body: putBody,
        responses: { 200: listingReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const params = parseInput(paramsSchema, request.params, 'path');
      const { alias } = parseInput(putAlias, params, 'path');
      const { entries } = parseInput(putBody, request.body ?? {});
      const holder = await find(request.principal, params, 'write');
      return ok(listing(await putMetadata(app.ctx.db, holder, alias, entries)));
    },
  );
}

/** Metadata listings of blobs and revisions: JSON entries stored under an alias (docs/resources.md, "Metadata listings"). */
export async function metadataRoutes(app: FastifyInstance): Promise<void> {
  const db = app.ctx.db;
  listingRoutes(app, {
    path: '/blobs/:org_id/:blob_id/metadata/:alias',
    params: blobParams,
    noun: 'blob',
    writeNeeds: '`write`.',
    find: async (principal, params, level) => {
      const { blob } = await blobFor(db, principal, params.org_id, params.blob_id, level);
      return { kind: 'blob', id: blob.id };
    },
  });
  listingRoutes(app, {
    path: '/revisions/:id/metadata/:alias',
    params: revisionParams,
    noun: 'revision',
    writeNeeds: '`write` on its blob.',
    find: async (principal, params, level) => {
      const { revision } = await revisionFor(db, principal, params.id, level);
      return { kind: 'revision', id: revision.id };
    },
  });
}
