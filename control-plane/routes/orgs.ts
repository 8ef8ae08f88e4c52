import { limitInForce } from '../../shared/limits/in-force.ts';
import { takeSlot } from '../../shared/limits/holdings.ts';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Tx } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { roleAtLeast, type Role } from '../../shared/roles.ts';
import { parseInput } from '../../shared/validate.ts';
import { attachBlobGrants, blobStanding, orgFor, requireRole, userStanding } from '../access/standing.ts';
import { governVisibilityChange } from '../access/visibility-change.ts';
import type { Principal } from '../auth/principal.ts';
import type { AppContext } from '../context.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { blobSchema, orgSchema } from '../openapi/records.ts';
import { blobRecord, listOrgBlobs } from '../sql/blobs.ts';
import { deleteOrg, insertOrg, lockOrgByRef, lockOrgOwner, orgRecord, updateOrg, type OrgRow } from '../sql/orgs.ts';
import { claimingAlias } from '../sql/unique.ts';
import { findUser } from '../sql/users.ts';
import { nameSchema, roleToChange, sendNamedCreate, visibilitySchema } from './named-resources.ts';

const idParams = z.strictObject({ id: refSchema });
const createBody = z.strictObject({
  alias: aliasSchema,
  name: nameSchema.optional(),
  visibility: visibilitySchema.optional(),
});
const patchBody = z.strictObject({
  name: nameSchema.optional(),
  alias: aliasSchema.optional(),
  visibility: visibilitySchema.optional(),
  owner_id: refSchema.optional(),
});

const TAGS = ['Organizations'];
const orgReply = success({ org: orgSchema }, 'The organization.');

/**
 * Where Create Organization's limit (`platform.orgs_per_user`) is checked. It runs under the
 * owner's row lock inside the creating transaction, so the count and the insert commit together.
 */
async function checkOrgCreation(_ctx: AppContext, tx: Tx, ownerId: string): Promise<void> {
  const inForce = await limitInForce(tx, { userId: ownerId }, 'platform.orgs_per_user');
  await takeSlot(tx, 'platform.orgs_per_user', ownerId, inForce);
}

/**
 * Only the owner may delete or transfer an organization. The owner's own standing is checked
 * too, so a `read` API key minted by the owner cannot act as the owner (role cap).
 */
function requireOwner(principal: Principal, org: OrgRow, role: Role, what: string): void {
  requireRole(role, 'admin', 'organization');
  if (org.owner_id !== principal.userId)
    throw new ServiceError('forbidden', `Only the organization's owner may ${what}.`);
}

/** The new owner of a transfer: an existing human user, by id, alias or `me`. */
async function resolveNewOwner(ctx: AppContext, tx: Tx, principal: Principal, ref: string): Promise<string> {
  const user = await findUser(tx, ref === 'me' ? principal.userId : ref);
  if (!user) throw new ServiceError('not_found', 'owner_id names no user.');
  // A service account is owned by a human and is removed with it; an organization handed to one
  // would stand in the way of that cascade.
  if (user.kind !== 'human')
    throw new ServiceError('invalid_request_body', 'owner_id must name a human user, not a service account.');
  return user.id;
}

/** Organizations: create, read, update (rename, visibility, transfer), delete, list blobs (docs/resources.md, "Organizations"). */
export async function orgRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.post(
    '/orgs',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Create an organization owned by the caller',
        description: 'Checks `platform.orgs_per_user`.',
        body: createBody,
        responses: { 201: orgReply },
        idempotent: true,
        errors: ['forbidden', 'alias_taken', 'limit_exceeded'],
      }),
    },
    async (request, reply) => {
      const body = parseInput(createBody, request.body ?? {});
      const principal = request.principal;
      // The new organization is the caller's own: that needs write over its own account, which a
      // `read` key lacks and a key confined to an organization or blob does not reach.
      const self = userStanding(principal, { id: principal.userId, kind: principal.kind, owner_id: null });
      if (!roleAtLeast(self, 'write'))
        throw new ServiceError('forbidden', 'Creating an organization needs write over your own account.');
      return sendNamedCreate(
        ctx,
        request,
        reply,
        { body },
        {
          what: 'organization',
          admit: async (tx) => {
            if (!(await lockOrgOwner(tx, principal.userId)))
              throw new ServiceError('unauthorized', 'The account no longer exists.');
            await checkOrgCreation(ctx, tx, principal.userId);
          },
          insert: (tx, fields) => insertOrg(tx, { ...fields, ownerId: principal.userId }),
          answer: async (_tx, org) => ({ org: orgRecord(org) }),
        },
      );
    },
  );

  app.get(
    '/orgs/:id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Get an organization',
        params: idParams,
        responses: { 200: orgReply },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { id } = parseInput(idParams, request.params, 'path');
      const { org } = await orgFor(ctx.db, request.principal, id, 'read');
      return ok({ org: orgRecord(org) });
    },
  );

  app.patch(
    '/orgs/:id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Rename, re-alias, change visibility or transfer an organization',
        description:
          '`write`; `admin` when `alias` or `visibility` changes (*perimeter* on a visibility change); the owner when `owner_id` changes.',
        params: idParams,
        body: patchBody,
        responses: { 200: orgReply },
        errors: ['not_found', 'forbidden', 'alias_taken'],
      }),
    },
    async (request) => {
      const { id } = parseInput(idParams, request.params, 'path');
      const body = parseInput(patchBody, request.body ?? {});
      const principal = request.principal;
      const org = await ctx.db.transaction(async (tx) => {
        await lockOrgByRef(tx, id);
        const { org, role } = await orgFor(tx, principal, id, 'read');
        // The perimeter first: a governed change is audited even when the role check would refuse it.
        governVisibilityChange(request, { type: 'organization', id: org.id }, org.visibility, body.visibility);
        requireRole(role, roleToChange(org, body), 'organization');
        const ownerId =
          body.owner_id === undefined ? undefined : await resolveNewOwner(ctx, tx, principal, body.owner_id);
        if (ownerId !== undefined && ownerId !== org.owner_id) requireOwner(principal, org, role, 'transfer it');
        const updated = await claimingAlias('organization', () =>
          updateOrg(tx, org.id, {
            name: body.name,
            alias: body.alias,
            visibility: body.visibility,
            ownerId,
          }),
        );
        if (!updated) throw new ServiceError('not_found', 'No such organization.');
        return updated;
      });
      return ok({ org: orgRecord(org) });
    },
  );

  app.delete(
    '/orgs/:id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Delete an organization and everything in it',
        description: 'The owner only.',
        params: idParams,
        responses: { 200: orgReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const { id } = parseInput(idParams, request.params, 'path');
      const principal = request.principal;
      const org = await ctx.db.transaction(async (tx) => {
        await lockOrgByRef(tx, id);
        const { org, role } = await orgFor(tx, principal, id, 'read');
        requireOwner(principal, org, role, 'delete it');
        const deleted = await deleteOrg(tx, org.id);
        if (!deleted) throw new ServiceError('not_found', 'No such organization.');
        return deleted;
      });
      return ok({ org: orgRecord(org) });
    },
  );

  app.get(
    '/orgs/:id/blobs',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'List the blobs of an organization the caller may read',
        description: 'Unpaginated.',
        params: idParams,
        responses: { 200: success({ blobs: z.array(blobSchema) }, 'The blobs.') },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { id } = parseInput(idParams, request.params, 'path');
      const principal = request.principal;
      const { org } = await orgFor(ctx.db, principal, id, 'read');
      // Read first, filter after: a blob the caller may not read is left out, never reported.
      const rows = await attachBlobGrants(ctx.db, principal, await listOrgBlobs(ctx.db, org.id));
      const readable = rows.filter((blob) => roleAtLeast(blobStanding(principal, org, blob), 'read'));
      return ok({ blobs: readable.map(blobRecord) });
    },
  );
}
