import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { ROLES, type Role } from '../../shared/roles.ts';
import { parseInput } from '../../shared/validate.ts';
import { requireHumanBehind } from '../access/perimeter.ts';
import { markAudit } from '../audit/audit-hook.ts';
import { resolveTarget, targetIdSchema, whileTargetExists } from '../access/targets.ts';
import { requireRole } from '../access/standing.ts';
import type { Principal } from '../auth/principal.ts';
import type { Queryable } from '../../shared/db/db.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { memberSchema } from '../openapi/records.ts';
import { deleteMembership, listMemberships, memberRecord, upsertMembership } from '../sql/members.ts';
import { findUser, type UserRow } from '../sql/users.ts';

const memberTargetSchema = z.enum(['organization', 'blob']);
const grantBody = z.strictObject({
  target: memberTargetSchema,
  target_id: targetIdSchema,
  user_id: refSchema,
  role: z.enum(ROLES),
});
const revokeBody = z.strictObject({ target: memberTargetSchema, target_id: targetIdSchema, user_id: refSchema });
const listParams = z.strictObject({ target: memberTargetSchema, target_id: targetIdSchema });

const TAGS = ['Access'];
const memberReply = success({ member: memberSchema }, 'The membership.');

/** The member named by `user_id` (id, alias or `me`); accounts are public, so 404 only when none exists. */
async function memberUser(q: Queryable, principal: Principal, ref: string): Promise<UserRow> {
  const user = await findUser(q, ref === 'me' ? principal.userId : ref);
  if (!user) throw new ServiceError('not_found', 'No such user.');
  return user;
}

/** Memberships on organizations and blobs (docs/access.md, "Memberships"). Granting and revoking are perimeter operations. */
export async function memberRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.post(
    '/members',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Grant or change a membership (upsert)',
        description: '`admin` on the target; *perimeter*.',
        body: grantBody,
        responses: { 200: memberReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'grant a membership');
      const body = parseInput(grantBody, request.body ?? {});
      const member = await ctx.db.transaction(async (tx) => {
        const target = await resolveTarget(ctx, principal, body.target, body.target_id, 'admin', { q: tx });
        markAudit(request, { target: { type: body.target, id: target.id } });
        const user = await memberUser(tx, principal, body.user_id);
        return whileTargetExists(() => upsertMembership(tx, body.target, target.id, user.id, body.role));
      });
      return ok({ member: memberRecord(member) });
    },
  );

  app.delete(
    '/members',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Revoke a membership',
        description: '`admin` on the target, or `read` to remove oneself; *perimeter*.',
        body: revokeBody,
        responses: { 200: memberReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'revoke a membership');
      const body = parseInput(revokeBody, request.body ?? {});
      const member = await ctx.db.transaction(async (tx) => {
        const target = await resolveTarget(ctx, principal, body.target, body.target_id, 'read', { q: tx });
        markAudit(request, { target: { type: body.target, id: target.id } });
        const user = await memberUser(tx, principal, body.user_id);
        // Leaving needs no admin: anyone may give up their own membership.
        const needed: Role = user.id === principal.userId ? 'read' : 'admin';
        requireRole(target.role, needed, body.target);
        const deleted = await deleteMembership(tx, body.target, target.id, user.id);
        if (!deleted) throw new ServiceError('not_found', 'No such membership.');
        return deleted;
      });
      return ok({ member: memberRecord(member) });
    },
  );

  app.get(
    '/members/target/:target/:target_id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'List the memberships of an organization or blob',
        params: listParams,
        responses: { 200: success({ members: z.array(memberSchema) }, 'The memberships.') },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const params = parseInput(listParams, request.params, 'path');
      const target = await resolveTarget(ctx, request.principal, params.target, params.target_id, 'read');
      const members = await listMemberships(ctx.db, params.target, target.id);
      return ok({ members: members.map(memberRecord) });
    },
  );
}
