import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { createCredentialCipher } from '../../shared/crypto/credential-cipher.ts';
import { ServiceError } from '../../shared/errors.ts';
import { parseInput } from '../../shared/validate.ts';
import { requireHumanBehind } from '../access/perimeter.ts';
import { markAudit } from '../audit/audit-hook.ts';
import { listTargeted, removeTargeted } from '../access/targeted-rows.ts';
import { resolveTarget, targetIdSchema, targetSchema, whileTargetExists } from '../access/targets.ts';
import { sendCreated } from '../idempotency/idempotent.ts';
import { ok } from '../reply.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { credentialSchema } from '../openapi/records.ts';
import {
  countOrgBlobs,
  credentialRecord,
  deleteCredential,
  findCredential,
  insertCredential,
  listCredentials,
} from '../sql/credentials.ts';
import { isUniqueViolation } from '../sql/unique.ts';

/** Names are referenced from workflow configuration, so they keep to a conservative grammar. */
const credentialName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    'name must be 1-128 characters of A-Z a-z 0-9 . _ - starting with a letter or digit',
  );
/** Secrets are tokens, passwords and private keys; 64 KiB holds any of them. */
const MAX_SECRET_BYTES = 64 * 1024;
/** Most blobs an organization credential may be restricted to. */
const MAX_CREDENTIAL_BLOBS = 100;

const storeBody = z.strictObject({
  target: targetSchema,
  target_id: targetIdSchema,
  name: credentialName,
  secret: z
    .string()
    .min(1)
    .refine(
      (s) => Buffer.byteLength(s, 'utf8') <= MAX_SECRET_BYTES,
      `secret must be at most ${MAX_SECRET_BYTES} bytes`,
    ),
  /**
   * An organization credential resolves in workflows of these blobs of the organization only
   * (docs/access.md, "Credentials in workflows"); left out: every blob of the organization.
   */
  blob_ids: z.array(z.uuid()).min(1).max(MAX_CREDENTIAL_BLOBS).optional(),
});
const deleteBody = z.strictObject({ id: z.string().min(1).max(200) });
const listParams = z.strictObject({ target: targetSchema, target_id: targetIdSchema });

const TAGS = ['Access'];
const credentialReply = success({ credential: credentialSchema }, 'The credential (never its secret).');

/**
 * Store, delete and list credentials (docs/access.md, "Credentials"). The secret is sealed before
 * it reaches the database and no route ever answers with it; only the runners open it. Storing and
 * deleting are perimeter operations.
 */
export async function credentialRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;
  const cipher = createCredentialCipher(ctx.config.secrets.CREDENTIAL_KEY);

  app.post(
    '/credentials',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Store a credential',
        description:
          '`admin` on the target; *perimeter*. 409 when the target has one of that name. `blob_ids` (organization credentials only) restricts the blobs whose workflows resolve it.',
        body: storeBody,
        idempotent: true,
        responses: { 201: credentialReply },
        errors: ['not_found', 'forbidden', 'conflict'],
      }),
    },
    async (request, reply) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'store a credential');
      const body = parseInput(storeBody, request.body ?? {});
      if (body.blob_ids !== undefined && body.target !== 'organization')
        throw new ServiceError(
          'invalid_request_body',
          'Invalid body: blob_ids: only a credential of an organization can be restricted to blobs',
        );
      const id = randomUUID();
      const sealed = cipher.encrypt(body.secret, id);
      return sendCreated(ctx, request, reply, { body }, async (tx) => {
        const target = await resolveTarget(ctx, principal, body.target, body.target_id, 'admin', { q: tx });
        markAudit(request, { target: { type: body.target, id: target.id } });
        const blobIds = body.blob_ids === undefined ? null : [...new Set(body.blob_ids.map((b) => b.toLowerCase()))];
        if (blobIds && (await countOrgBlobs(tx, target.id, blobIds)) !== blobIds.length)
          throw new ServiceError('not_found', 'Every blob in blob_ids must be a blob of the organization.');
        try {
          const row = await whileTargetExists(() =>
            insertCredential(tx, {
              id,
              name: body.name,
              target: body.target,
              targetId: target.id,
              sealed,
              createdBy: principal.userId,
              blobIds,
            }),
          );
          return { status: 201, body: ok({ credential: credentialRecord(row) }) };
        } catch (error) {
          if (isUniqueViolation(error, /^credentials_.*_name_key$/)) {
            throw new ServiceError(
              'conflict',
              `The ${body.target} already has a credential named ${body.name}; delete it first to replace it.`,
              {},
              { cause: error },
            );
          }
          throw error;
        }
      });
    },
  );

  app.delete(
    '/credentials',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'Delete a credential',
        description: '`admin` on its target; *perimeter*.',
        body: deleteBody,
        responses: { 200: credentialReply },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const principal = request.principal;
      requireHumanBehind(principal, 'delete a credential');
      const { id } = parseInput(deleteBody, request.body ?? {});
      const deleted = await removeTargeted(ctx, principal, id, {
        notFound: 'No such credential.',
        find: findCredential,
        remove: deleteCredential,
        forbidden: (credential) => `Deleting a credential needs admin on its ${credential.target}.`,
      });
      return ok({ credential: credentialRecord(deleted) });
    },
  );

  app.get(
    '/credentials/target/:target/:target_id',
    {
      schema: routeSchema({
        tags: TAGS,
        summary: 'List the credentials of a target',
        params: listParams,
        responses: { 200: success({ credentials: z.array(credentialSchema) }, 'The credentials.') },
        errors: ['not_found', 'forbidden'],
      }),
    },
    async (request) => {
      const params = parseInput(listParams, request.params, 'path');
      const rows = await listTargeted(ctx, request.principal, params, listCredentials);
      return ok({ credentials: rows.map(credentialRecord) });
    },
  );
}
