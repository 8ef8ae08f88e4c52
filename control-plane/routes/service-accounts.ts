import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { aliasSchema, refSchema } from '../../shared/ids.ts';
import { roleAtLeast } from '../../shared/roles.ts';
import { parseInput } from '../../shared/validate.ts';
import { resolveTarget, targetIdSchema, targetSchema } from '../access/targets.ts';
import { requireHumanBehind } from '../access/perimeter.ts';
import { userAdminStanding } from '../access/user-standing.ts';
import { markAudit } from '../audit/audit-hook.ts';
import { findUser, userProfile } from '../sql/users.ts';
import {
  accountsWithStanding,
  deleteAccount,
  insertServiceAccount,
  lockAccountTree,
  ownedServiceAccounts,
} from '../sql/service-accounts.ts';
import { resolveUser } from './users.ts';
import { sendCreated } from '../idempotency/idempotent.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { userSchema } from '../openapi/records.ts';

const createBody = z.strictObject({
  name: z.string().trim().min(1).max(200),
  alias: aliasSchema.optional(),
});
const userParams = z.strictObject({ user_id: refSchema });
const targetParams = z.strictObject({ target: targetSchema, target_id: targetIdSchema });

const FK_VIOLATION = '23503';
const targetUsers = z.array(
  z.strictObject({
    user: userSchema,
    role: z
      .enum(['read', 'write', 'admin'])
      .optional()
      .meta({ description: 'Organizations and blobs: the standing the user holds.' }),
    via: z.string().optional().meta({ description: 'Organizations and blobs: where the standing comes from.' }),
  }),
);

/**
 * Service accounts and account deletion (docs/access.md, "Service accounts and acting tokens"), and
 * who holds standing on a target. Creating and deleting accounts is on the access perimeter: a
 * service account's own key is refused whatever its role.
 */
export async function serviceAccountRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.post(
    '/users',
    {
      schema: routeSchema({
        tags: ['Users'],
        summary: 'Create a service account owned by the caller',
        description: "*Perimeter*: refused to a service account's own key.",
        body: createBody,
        idempotent: true,
        responses: { 201: success({ user: userSchema }, 'The new service account.') },
        errors: ['forbidden', 'alias_taken'],
      }),
    },
    async (request, reply) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'create an account');
      const body = parseInput(createBody, request.body ?? {});
      // The owner is the account the request acts as: under an acting token, the service account.
      const self = await findUser(ctx.db, principal.userId);
      if (!self) throw new ServiceError('unauthorized', 'The account no longer exists.');
      if (!roleAtLeast(userAdminStanding(principal, self), 'admin')) {
        throw new ServiceError(
          'forbidden',
          'Creating a service account needs admin over your own account (an admin key with target user, or a token).',
        );
      }
      return sendCreated(ctx, request, reply, { body }, async (tx) => {
        const user = await insertServiceAccount(tx, { ownerId: self.id, name: body.name, alias: body.alias ?? null });
        markAudit(request, { target: { type: 'user', id: user.id } });
        return { status: 201, body: ok({ user: userProfile(user, true) }) };
      });
    },
  );

  app.delete(
    '/users/:user_id',
    {
      schema: routeSchema({
        tags: ['Users'],
        summary: "Delete one's account or retire an owned service account",
        description: '*Perimeter*. 409 `conflict` while the account (or one it owns) still owns organizations.',
        params: userParams,
        responses: { 200: success({ user: userSchema }, 'The account as it was.') },
        errors: ['not_found', 'forbidden', 'conflict'],
      }),
    },
    async (request) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'delete or retire an account');
      const { user_id } = parseInput(userParams, request.params, 'params');
      const user = await resolveUser(ctx.db, principal, user_id);
      markAudit(request, { target: { type: 'user', id: user.id } });
      if (!roleAtLeast(userAdminStanding(principal, user), 'admin')) {
        throw new ServiceError(
          'forbidden',
          user.kind === 'service'
            ? 'Only the owner of a service account may retire it.'
            : 'Only the user itself may delete its account.',
        );
      }
      const deleted = await ctx.db.transaction(async (tx) => {
        const tree = await lockAccountTree(tx, user.id);
        if (tree.accounts === 0) return undefined;
        if (tree.orgs > 0) {
          throw new ServiceError(
            'conflict',
            `The account (or a service account it owns) still owns ${tree.orgs} organization(s); delete or transfer them first.`,
          );
        }
        try {
          return await deleteAccount(tx, user.id);
        } catch (error) {
          // An organization given to one of these accounts since the check (a transfer) holds it.
          if ((error as { code?: unknown }).code === FK_VIOLATION) {
            throw new ServiceError(
              'conflict',
              'The account still owns organizations; delete or transfer them first.',
              {},
              { cause: error },
            );
          }
          throw error;
        }
      });
      if (!deleted) throw new ServiceError('not_found', 'No such user.');
      return ok({ user: userProfile(deleted, true) });
    },
  );

  app.get(
    '/users/target/:target/:target_id',
    {
      schema: routeSchema({
        tags: ['Users'],
        summary: 'Who holds standing on a target',
        description:
          'For an organization or blob: `[{user, role, via}]` (needs `read`); for a user: its service accounts `[{user}]` (needs admin standing over it).',
        params: targetParams,
        responses: { 200: success({ users: targetUsers }, 'The users.') },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const principal = request.principal;
      const { target, target_id } = parseInput(targetParams, request.params, 'params');
      // Anyone may read an account's public profile, so a caller without admin standing over it
      // gets 403, not 404. Organizations and blobs need read, and are 404 to those without it.
      const found = await resolveTarget(ctx, principal, target, target_id, target === 'user' ? 'admin' : 'read');
      if (target === 'user') {
        const accounts = await ownedServiceAccounts(ctx.db, found.id);
        return ok({ users: accounts.map((account) => ({ user: userProfile(account, true) })) });
      }
      const rows = await accountsWithStanding(ctx.db, found.org!.id, found.blob?.id ?? null);
      return ok({
        users: rows.map((row) => ({
          user: userProfile(row.user, row.user.id === principal.userId),
          role: row.role,
          via: row.via,
        })),
      });
    },
  );
}
