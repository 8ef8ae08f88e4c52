import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../shared/errors.ts';
import { ROLES } from '../../shared/roles.ts';
import { parseInput } from '../../shared/validate.ts';
import { requireHumanBehind } from '../access/perimeter.ts';
import { markAudit } from '../audit/audit-hook.ts';
import { listTargeted, removeTargeted } from '../access/targeted-rows.ts';
import { resolveTarget, targetIdSchema, targetSchema, whileTargetExists } from '../access/targets.ts';
import { generateApiKey } from '../../shared/api-key-format.ts';
import type { Principal } from '../auth/principal.ts';
import { sendCreated } from '../idempotency/idempotent.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { apiKeySchema, mintedApiKeySchema } from '../openapi/records.ts';
import { apiKeyRecord, deleteApiKey, findApiKey, insertApiKey, listApiKeys, type ApiKeyRow } from '../sql/api-keys.ts';

const mintBody = z.strictObject({
  target: targetSchema,
  target_id: targetIdSchema,
  role: z.enum(ROLES),
  name: z.string().trim().max(200).optional(),
});
const revokeBody = z.strictObject({ id: z.string().min(1).max(200) });
const listParams = z.strictObject({ target: targetSchema, target_id: targetIdSchema });

const TAGS = ['Access'];

/**
 * The minter may revoke its own key whatever its standing is now (so a demoted member can still
 * withdraw what it handed out), but only with full power: not through a capped key, nor through
 * a key confined to some other target.
 */
function minterMayRevoke(principal: Principal, key: ApiKeyRow): boolean {
  if (key.created_by !== principal.userId) return false;
  const own = principal.key;
  if (!own) return true;
  if (own.role !== 'admin') return false;
  return own.target === 'user' || (own.target === key.target && own.targetId === key.target_id);
}

/** Mint, revoke and list API keys (docs/access.md, "API keys"). Minting and revoking are perimeter operations. */
export async function apiKeyRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;

  app.post(
    '/api-keys',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Mint an API key',
        description: '`admin` on the target; *perimeter*. The key is in this answer only.',
        body: mintBody,
        idempotent: true,
        responses: { 201: success({ api_key: mintedApiKeySchema }, 'The key, with its secret.') },
        errors: ['not_found', 'forbidden', 'cannot_mint_while_acting'],
      }),
    },
    async (request, reply) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'mint an API key');
      const body = parseInput(mintBody, request.body ?? {});
      // An acting token may give its service account a key of its own, but never hand out a key
      // confined to an organization or blob that would authenticate as the service account.
      if (principal.credential === 'acting' && body.target !== 'user') {
        throw new ServiceError('cannot_mint_while_acting');
      }
      const fresh = generateApiKey();
      // With an Idempotency-Key, the answer (the key's secret in it) is stored sealed for 24 hours,
      // so a retry whose first answer was lost still learns the key it minted.
      return sendCreated(ctx, request, reply, { body }, async (tx) => {
        const target = await resolveTarget(ctx, principal, body.target, body.target_id, 'admin', { q: tx });
        markAudit(request, { target: { type: body.target, id: target.id } });
        const row = await whileTargetExists(() =>
          insertApiKey(tx, {
            publicId: fresh.publicId,
            secretHash: fresh.hash,
            name: body.name ?? '',
            target: body.target,
            targetId: target.id,
            role: body.role,
            // A user key authenticates as that account; an organization or blob key as its minter.
            userId: body.target === 'user' ? target.id : principal.userId,
            createdBy: principal.userId,
          }),
        );
        return { status: 201, body: ok({ api_key: { ...apiKeyRecord(row), key: fresh.key } }) };
      });
    },
  );

  app.delete(
    '/api-keys',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Revoke an API key',
        description: '`admin` on its target, or its minter; *perimeter*.',
        body: revokeBody,
        responses: { 200: success({ api_key: apiKeySchema }, 'The revoked key.') },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'revoke an API key');
      const { id } = parseInput(revokeBody, request.body ?? {});
      const deleted = await removeTargeted(ctx, principal, id, {
        notFound: 'No such API key.',
        find: findApiKey,
        remove: deleteApiKey,
        mayWithoutAdmin: minterMayRevoke,
        forbidden: (key) => `Revoking this key needs admin on its ${key.target}, or to be its minter.`,
      });
      return ok({ api_key: apiKeyRecord(deleted) });
    },
  );

  app.get(
    '/api-keys/target/:target/:target_id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'List the API keys of a target (never their secrets)',
        params: listParams,
        responses: { 200: success({ api_keys: z.array(apiKeySchema) }, 'The keys.') },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const params = parseInput(listParams, request.params, 'path');
      const keys = await listTargeted(ctx, request.principal, params, listApiKeys);
      return ok({ api_keys: keys.map(apiKeyRecord) });
    },
  );
}
