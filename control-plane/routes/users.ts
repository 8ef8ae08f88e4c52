import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { roleAtLeast, type Role } from '../../shared/roles.ts';
import { parseInput } from '../../shared/validate.ts';
import type { Queryable } from '../../shared/db/db.ts';
import type { Principal } from '../auth/principal.ts';
import { findUser, updateUser, userOrgs, userProfile, type UserRow } from '../sql/users.ts';
import { orgRecord } from '../sql/orgs.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { orgSchema, userSchema } from '../openapi/records.ts';

const userParams = z.strictObject({ user_id: refSchema });

const patchBody = z.strictObject({
  name: z.string().trim().min(1).max(200).optional(),
  alias: aliasSchema.nullable().optional(),
});

/**
 * Resolves `{user_id}`: `me` is the caller, before any authorization check (docs/auth.md,
 * "User profiles"); anything else is an id or alias. 404 when no such user exists.
 */
export async function resolveUser(q: Queryable, principal: Principal, ref: string): Promise<UserRow> {
  const user = await findUser(q, ref === 'me' ? principal.userId : ref);
  if (!user) throw new ServiceError('not_found', 'No such user.');
  return user;
}

/**
 * The role the caller may use on its own account. Bearer and acting tokens carry full standing.
 * An API key is capped by its role, and one confined to an organization or blob reaches no
 * account at all (docs/access.md, "Using a key": such a key acts only on its target).
 */
function roleOverSelf(principal: Principal): Role | null {
  if (!principal.key) return 'admin';
  return principal.key.target === 'user' && principal.key.targetId === principal.userId ? principal.key.role : null;
}

/** Get and update a user's profile, and list the organizations on it (docs/auth.md, "User profiles"). */
export async function userRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.get(
    '/users/:user_id',
    {
      schema: routeSchema({
        tags: ['Users'],
        summary: 'Get a user',
        description: '`me` is the caller. The full profile for oneself, the public fields otherwise.',
        params: userParams,
        responses: { 200: success({ user: userSchema }, 'The user.') },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { user_id } = parseInput(userParams, request.params, 'params');
      const user = await resolveUser(ctx.db, request.principal, user_id);
      return ok({ user: userProfile(user, user.id === request.principal.userId) });
    },
  );

  app.patch(
    '/users/:user_id',
    {
      schema: routeSchema({
        tags: ['Users'],
        summary: "Update one's own profile",
        description: '`alias: null` removes the alias. A user key needs `write` for `name`, `admin` for `alias`.',
        params: userParams,
        body: patchBody,
        responses: { 200: success({ user: userSchema }, 'The updated profile.') },
        errors: ['not_found', 'forbidden', 'alias_taken'],
      }),
    },
    async (request) => {
      const { user_id } = parseInput(userParams, request.params, 'params');
      const principal = request.principal;
      const target = await resolveUser(ctx.db, principal, user_id);
      if (target.id !== principal.userId)
        throw new ServiceError('forbidden', 'Only the user itself may change its profile.');
      const body = parseInput(patchBody, request.body ?? {});
      // Renaming needs write; an alias change needs admin, as for organizations and blobs.
      const needed: Role = body.alias !== undefined ? 'admin' : 'write';
      if (!roleAtLeast(roleOverSelf(principal), needed)) {
        throw new ServiceError('forbidden', `This API key cannot change the profile (needs ${needed} on the user).`);
      }
      const user = await updateUser(ctx.db, target.id, body);
      if (!user) throw new ServiceError('not_found', 'No such user.');
      return ok({ user: userProfile(user, true) });
    },
  );

  app.get(
    '/users/:user_id/orgs',
    {
      schema: routeSchema({
        tags: ['Users'],
        summary: 'List the organizations a user owns',
        description: 'Unpaginated; others see the public ones only.',
        params: userParams,
        responses: { 200: success({ orgs: z.array(orgSchema) }, 'The organizations.') },
        errors: ['not_found'],
      }),
    },
    async (request) => {
      const { user_id } = parseInput(userParams, request.params, 'params');
      const user = await resolveUser(ctx.db, request.principal, user_id);
      const orgs = await userOrgs(ctx.db, user.id, user.id === request.principal.userId);
      return ok({ orgs: orgs.map(orgRecord) });
    },
  );
}
