import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { refSchema } from '../../shared/ids.ts';
import { roleAtLeast } from '../../shared/roles.ts';
import { parseInput } from '../../shared/validate.ts';
import { requireHumanBehind } from '../access/perimeter.ts';
import { userAdminStanding } from '../access/user-standing.ts';
import { markAudit } from '../audit/audit-hook.ts';
import { ACTING_TOKEN_SECONDS } from '../auth/tokens.ts';
import { userProfile } from '../sql/users.ts';
import { resolveUser } from './users.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { userSchema } from '../openapi/records.ts';

const impersonateBody = z.strictObject({ user_id: refSchema });

/**
 * Impersonate (docs/access.md, "Acting tokens"): mints a 60-minute acting token for a service
 * account the caller owns. The token names the service account (`sub`) and the human behind the
 * request (`act.sub`); it is stateless and has no refresh token. Minting one is on the access
 * perimeter.
 */
export async function impersonateRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.post(
    '/auth/core/impersonate',
    {
      schema: routeSchema({
        tags: ['Sign-in and tokens'],
        summary: 'Mint an acting token for an owned service account',
        description: '60 minutes, no refresh token. *Perimeter*.',
        body: impersonateBody,
        responses: {
          200: success(
            {
              acting_token: z.string(),
              token_type: z.literal('Bearer'),
              expires_in: z.number().int(),
              user: userSchema,
            },
            'The acting token and the service account.',
          ),
        },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'mint an acting token');
      const body = parseInput(impersonateBody, request.body ?? {});
      const account = await resolveUser(ctx.db, principal, body.user_id);
      markAudit(request, { target: { type: 'user', id: account.id } });
      if (account.kind !== 'service') {
        throw new ServiceError(
          'invalid_request_body',
          'user_id must name a service account; a human cannot be impersonated.',
        );
      }
      // The owner only: "self" standing would let an acting token re-mint itself forever, which
      // would make it a refresh token in disguise.
      if (account.owner_id !== principal.userId || !roleAtLeast(userAdminStanding(principal, account), 'admin')) {
        throw new ServiceError('forbidden', 'Only the owner of a service account may act as it.');
      }
      return ok({
        // Under an acting token the human behind it is carried on, so act.sub is always a human.
        acting_token: await ctx.tokens.signActing(account.id, principal.humanId!),
        token_type: 'Bearer',
        expires_in: ACTING_TOKEN_SECONDS,
        user: userProfile(account, true),
      });
    },
  );
}
