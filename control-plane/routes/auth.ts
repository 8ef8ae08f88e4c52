import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { parseInput } from '../../shared/validate.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { AppContext } from '../context.ts';
import { createOidcVerifier } from '../auth/oidc.ts';
import { issueRefreshToken, rotateRefreshToken } from '../auth/refresh-tokens.ts';
import { createAnonymousUser, findUser, upsertOidcUser, userProfile, type UserRow } from '../sql/users.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { tokenPairFields } from '../openapi/records.ts';

const anonymousBody = z.strictObject({});
const googleBody = z.strictObject({ id_token: z.string().min(1).max(16_384) });
const refreshBody = z.strictObject({ refresh_token: z.string().min(1).max(512) });
const TAGS = ['Sign-in and tokens'];
const tokenPairReply = success(tokenPairFields, 'The user and a new token pair.');

async function tokenPair(ctx: AppContext, user: UserRow, refreshToken: string) {
  return ok({
    user: userProfile(user, true),
    access_token: await ctx.tokens.signAccess(user.id),
    refresh_token: refreshToken,
    token_type: 'Bearer',
    expires_in: ctx.tokens.accessSeconds,
  });
}

/** Sign-in (anonymous, identity provider) and Refresh Token (docs/auth.md, "Sign-in"). */
export async function authRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;
  const oidc = createOidcVerifier(ctx.config.oidc);
  const open = { config: { public: true } };

  app.post(
    '/auth/anonymous',
    {
      ...open,
      schema: routeSchema({
        tags: TAGS,
        summary: 'Sign in as a new anonymous user',
        body: anonymousBody,
        responses: { 200: tokenPairReply },
        public: true,
      }),
    },
    async (request) => {
      parseInput(anonymousBody, request.body ?? {});
      const { user, refresh } = await ctx.db.transaction(async (tx) => {
        const user = await createAnonymousUser(tx);
        return { user, refresh: await issueRefreshToken(ctx, tx, user.id) };
      });
      return tokenPair(ctx, user, refresh);
    },
  );

  app.post(
    '/auth/google',
    {
      ...open,
      schema: routeSchema({
        tags: TAGS,
        summary: 'Sign in with a Google ID token',
        description: 'Needs OIDC_AUDIENCE configured.',
        body: googleBody,
        responses: { 200: tokenPairReply },
        errors: ['unauthorized'],
        public: true,
      }),
    },
    async (request) => {
      const body = parseInput(googleBody, request.body ?? {});
      const identity = await oidc.verify(body.id_token);
      const { user, refresh } = await ctx.db.transaction(async (tx) => {
        const user = await upsertOidcUser(tx, identity);
        return { user, refresh: await issueRefreshToken(ctx, tx, user.id) };
      });
      return tokenPair(ctx, user, refresh);
    },
  );

  app.post(
    '/auth/refresh',
    {
      ...open,
      schema: routeSchema({
        tags: TAGS,
        summary: 'Trade a refresh token for a new pair (rotation)',
        body: refreshBody,
        responses: { 200: tokenPairReply },
        errors: ['unauthorized'],
        public: true,
      }),
    },
    async (request) => {
      const body = parseInput(refreshBody, request.body ?? {});
      const { userId, refreshToken } = await rotateRefreshToken(ctx, body.refresh_token);
      const user = await findUser(ctx.db, userId);
      if (!user) throw new ServiceError('unauthorized');
      return tokenPair(ctx, user, refreshToken);
    },
  );
}
