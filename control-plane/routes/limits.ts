import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { roleAtLeast } from '../../shared/roles.ts';
import { parseInput } from '../../shared/validate.ts';
import { blobFor, orgFor, userStanding } from '../access/standing.ts';
import { limitsRead } from '../limits/reads.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { limitGroupSchema } from '../openapi/records.ts';
import { resolveUser } from './users.ts';

const userParams = z.strictObject({ user_id: refSchema });
const orgParams = z.strictObject({ id: refSchema });
const blobParams = z.strictObject({ org_id: refSchema, blob_id: refSchema });
const groupsReply = success({ groups: z.array(limitGroupSchema) }, 'The limits in force, by group.');
const TAGS = ['Limits'];

/**
 * The three limits reads (docs/limits.md, "Limits reads"). Overrides are read on every
 * request through the ownership chain as it is now, so a transferred organization shows its new
 * owner's overrides at once.
 */
export async function limitsRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  // Self, or admin standing over the user (the owner of a service account); 403 for anyone else,
  // including a key confined to an organization or blob: every user's public profile is readable
  // (GET /users/:id), so a 404 here would hide nothing.
  app.get(
    '/users/:user_id/limits',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Get User Limits',
        description: "Self, or admin standing over the user (a service account's owner).",
        params: userParams,
        responses: { 200: groupsReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const { user_id } = parseInput(userParams, request.params, 'path');
      const user = await resolveUser(ctx.db, request.principal, user_id);
      const standing = userStanding(request.principal, user);
      if (!roleAtLeast(standing, 'admin'))
        throw new ServiceError(
          'forbidden',
          'Only the user or an account with admin standing over it may read its limits.',
        );
      return ok({ groups: await limitsRead(ctx.db, { targetType: 'user', id: user.id }) });
    },
  );

  app.get(
    '/orgs/:id/limits',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Get Organization Limits',
        params: orgParams,
        responses: { 200: groupsReply },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { id } = parseInput(orgParams, request.params, 'path');
      const { org } = await orgFor(ctx.db, request.principal, id, 'read');
      return ok({ groups: await limitsRead(ctx.db, { targetType: 'org', id: org.id }) });
    },
  );

  app.get(
    '/blobs/:org_id/:blob_id/limits',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Get Blob Limits',
        params: blobParams,
        responses: { 200: groupsReply },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { org_id, blob_id } = parseInput(blobParams, request.params, 'path');
      const { blob } = await blobFor(ctx.db, request.principal, org_id, blob_id, 'read');
      return ok({ groups: await limitsRead(ctx.db, { targetType: 'blob', id: blob.id, blobType: blob.type }) });
    },
  );
}
