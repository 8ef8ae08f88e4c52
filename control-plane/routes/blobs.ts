import { limitsInForce } from '../../shared/limits/in-force.ts';
import { takeSlot } from '../../shared/limits/holdings.ts';
import { enabledLimitOf, entitlementRefusal } from '../../shared/limits/index.ts';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { isBlobType, type BlobType } from '../../shared/blob-types.ts';
import type { Tx } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { parseInput } from '../../shared/validate.ts';
import { blobFor, orgFor, requireRole } from '../access/standing.ts';
import { governVisibilityChange } from '../access/visibility-change.ts';
import type { AppContext } from '../context.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { blobSchema, revisionSchema } from '../openapi/records.ts';
import { blobRecord, deleteBlob, insertBlob, lockBlobByRef, updateBlob } from '../sql/blobs.ts';
import { lockOrgByRef, type OrgRow } from '../sql/orgs.ts';
import { insertNextRevision, revisionRecord } from '../sql/revisions.ts';
import { claimingAlias } from '../sql/unique.ts';
import { nameSchema, roleToChange, sendNamedCreate, visibilitySchema } from './named-resources.ts';

const orgParams = z.strictObject({ org_id: refSchema });
const blobParams = z.strictObject({ org_id: refSchema, blob_id: refSchema });
const createBody = z.strictObject({
  // Any string passes the schema: a string that names no type is `invalid_blob_type`, not a body error.
  type: z.string().max(200),
  alias: aliasSchema,
  name: nameSchema.optional(),
  visibility: visibilitySchema.optional(),
});
const patchBody = z.strictObject({
  name: nameSchema.optional(),
  alias: aliasSchema.optional(),
  visibility: visibilitySchema.optional(),
});

const TAGS = ['Blobs'];
const blobReply = success({ blob: blobSchema }, 'The blob.');

/**
 * Where Create Blob's limits are checked: the type's `<family>.enabled` entitlement
 * (`invalid_blob_type` with `limit`) and `platform.blobs_per_org`. It runs under the
 * organization's row lock inside the creating transaction.
 */
async function checkBlobCreation(_ctx: AppContext, tx: Tx, org: OrgRow, type: BlobType): Promise<void> {
  const limits = await limitsInForce(tx, { orgId: org.id });
  const enabled = limits[enabledLimitOf(type)];
  if (enabled.value !== true) throw entitlementRefusal(enabled);
  await takeSlot(tx, 'platform.blobs_per_org', org.id, limits['platform.blobs_per_org']);
}

/** Blobs: create (with revision 1), read, update, delete (docs/resources.md, "Blobs"). */
export async function blobRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.post(
    '/blobs/:org_id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Create a blob (and its revision 1)',
        description: '`write` on the organization; checks `<family>.enabled` and `platform.blobs_per_org`.',
        params: orgParams,
        body: createBody,
        idempotent: true,
        responses: { 201: success({ blob: blobSchema, revision: revisionSchema }, 'The blob and its first revision.') },
        errors: ['not_found', 'forbidden', 'alias_taken', 'invalid_blob_type', 'limit_exceeded'],
      }),
    },
    async (request, reply) => {
      const { org_id } = parseInput(orgParams, request.params, 'path');
      const body = parseInput(createBody, request.body ?? {});
      const principal = request.principal;
      return sendNamedCreate(
        ctx,
        request,
        reply,
        { org_id, body },
        {
          what: 'blob',
          admit: async (tx) => {
            await lockOrgByRef(tx, org_id);
            const { org } = await orgFor(tx, principal, org_id, 'write');
            const type = body.type;
            if (!isBlobType(type)) throw new ServiceError('invalid_blob_type', `No blob type is called "${type}".`);
            await checkBlobCreation(ctx, tx, org, type);
            return { org, type };
          },
          insert: (tx, fields, { org, type }) => insertBlob(tx, { ...fields, orgId: org.id, type }),
          // The first revision is part of the blob: created (and counted) in the same transaction.
          answer: async (tx, blob) => {
            const revision = await insertNextRevision(tx, blob.id);
            return { blob: blobRecord(blob), revision: revisionRecord(revision) };
          },
        },
      );
    },
  );

  app.get(
    '/blobs/:org_id/:blob_id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Get a blob',
        params: blobParams,
        responses: { 200: blobReply },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { org_id, blob_id } = parseInput(blobParams, request.params, 'path');
      const { blob } = await blobFor(ctx.db, request.principal, org_id, blob_id, 'read');
      return ok({ blob: blobRecord(blob) });
    },
  );

  app.patch(
    '/blobs/:org_id/:blob_id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Rename, re-alias or change the visibility of a blob',
        description: '`write`; `admin` when `alias` or `visibility` changes (*perimeter* on a visibility change).',
        params: blobParams,
        body: patchBody,
        responses: { 200: blobReply },
        errors: ['not_found', 'forbidden', 'alias_taken'],
      }),
    },
    async (request) => {
      const { org_id, blob_id } = parseInput(blobParams, request.params, 'path');
      const body = parseInput(patchBody, request.body ?? {});
      const principal = request.principal;
      const blob = await ctx.db.transaction(async (tx) => {
        await lockBlobByRef(tx, org_id, blob_id);
        const { blob, role } = await blobFor(tx, principal, org_id, blob_id, 'read');
        // The perimeter first: a governed change is audited even when the role check would refuse it.
        governVisibilityChange(request, { type: 'blob', id: blob.id }, blob.visibility, body.visibility);
        requireRole(role, roleToChange(blob, body), 'blob');
        const updated = await claimingAlias('blob', () => updateBlob(tx, blob.id, body));
        if (!updated) throw new ServiceError('not_found', 'No such blob.');
        return updated;
      });
      return ok({ blob: blobRecord(blob) });
    },
  );

  app.delete(
    '/blobs/:org_id/:blob_id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Delete a blob with its revisions and content',
        description: '`admin`.',
        params: blobParams,
        responses: { 200: blobReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const { org_id, blob_id } = parseInput(blobParams, request.params, 'path');
      const principal = request.principal;
      const blob = await ctx.db.transaction(async (tx) => {
        await lockBlobByRef(tx, org_id, blob_id);
        // Deleting takes every revision and all content with it: admin, not write.
        const { blob } = await blobFor(tx, principal, org_id, blob_id, 'admin');
        const deleted = await deleteBlob(tx, blob.id);
        if (!deleted) throw new ServiceError('not_found', 'No such blob.');
        return deleted;
      });
      return ok({ blob: blobRecord(blob) });
    },
  );
}
