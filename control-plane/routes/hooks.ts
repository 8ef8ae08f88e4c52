import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { createCredentialCipher } from '../../shared/crypto/credential-cipher.ts';
import { ServiceError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { limitById } from '../../shared/limits/catalog.ts';
import { limitExceeded } from '../../shared/limits/index.ts';
import { roleAtLeast } from '../../shared/roles.ts';
import { readMessage, REPLAY_WINDOW_SECONDS, verifies } from '../../shared/webhooks/signature.ts';
import { BoundedMap, RateWindows } from '../limits/rate-windows.ts';
import { REPLAYED_HEADER } from '../idempotency/idempotent.ts';
import { routeSchema, success } from '../openapi/route-schema.ts';
import { claimReceipt, insertReceipt, triggerTarget } from '../sql/triggers.ts';

/**
 * `workflow.execution_input_bytes` is `fixed` (the same for every account), so a body is measured
 * against it as it arrives, before the trigger is looked up.
 */
const INPUT_LIMIT = limitById('workflow.execution_input_bytes');
const INPUT_BYTES = INPUT_LIMIT.default as number;

const params = z.strictObject({ trigger_id: z.string().min(1).max(100) });

const notFound = () => new ServiceError('not_found', 'No such trigger.');
const badSignature = (why: string) =>
  new ServiceError('unauthorized', `The request is not signed for this trigger: ${why}.`);

function tooLarge(): ServiceError {
  return limitExceeded({ id: INPUT_LIMIT.id, value: INPUT_BYTES, source: 'default' });
}

function throttled(wait: number, what: string): ServiceError {
  const error = new ServiceError('rate_limited', `Too many requests ${what}; try again in ${wait} s.`);
  error.retryAfterSeconds = wait;
  return error;
}

/**
 * Reads a body as bytes, refusing it past the input ceiling: a declared length past it before a
 * byte is read, an undeclared one as soon as it passes it.
 */
function boundedBody(request: FastifyRequest, payload: NodeJS.ReadableStream): Promise<Buffer> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > INPUT_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    payload.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > INPUT_BYTES) {
        payload.removeAllListeners('data');
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    payload.on('end', () => resolve(Buffer.concat(chunks)));
    payload.on('error', reject);
  });
}

/** The body as input_data: JSON text (UTF-8); an empty body is no input. */
function inputOf(body: Buffer): { inputJson: string; inputBytes: number } {
  if (body.length === 0) return { inputJson: 'null', inputBytes: 0 };
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ServiceError('invalid_request_body', 'The body is not JSON: a trigger takes a JSON body as input_data.');
  }
  const inputJson = JSON.stringify(value);
  return { inputJson, inputBytes: Buffer.byteLength(inputJson, 'utf8') };
}

/**
 * `POST /v1/hooks/:trigger_id` (docs/webhooks.md, "Receiving"): unauthenticated callers, so every
 * refusal that can be made without the database is made first, and no connection is taken until
 * the whole body is read. In order: the address's misses and the trigger's and organization's
 * throttles (429, before the body is read: memory only), the body against
 * `workflow.execution_input_bytes` (400 `limit_exceeded` with the limit object), the signature
 * headers and the replay window (401), the trigger (404), the signature itself (401, compared in
 * constant time), the standing of the account the trigger acts as (403). Then one transaction
 * creates the execution exactly as `create_execution` would (the session's blob's limits) with
 * its job, and records the message's `webhook-id`: the same message again within the window
 * answers the same execution (with `Idempotent-Replayed: true`), never a second one.
 */
export async function hookRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.ctx;
  const settings = ctx.config.hooks;
  const cipher = createCredentialCipher(ctx.config.secrets.CREDENTIAL_KEY);
  const perTrigger = new RateWindows(settings.callsPerTrigger);
  const perOrg = new RateWindows(settings.callsPerOrg);
  const misses = new RateWindows(settings.missesPerAddress);
  const orgOf = new BoundedMap<string>();

  // Only this plugin's route: the body is kept as the bytes that were signed.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (request, payload, done) => {
    boundedBody(request, payload).then(
      (body) => done(null, body),
      (error: Error) => done(error, undefined),
    );
  });

  const refuseThrottled = async (request: FastifyRequest, _reply: FastifyReply) => {
    const { trigger_id: id } = request.params as { trigger_id: string };
    const org = orgOf.get(id);
    // An address that named too many unknown triggers is refused any trigger this control plane
    // has not seen; triggers it has seen answer as before, so a sender retrying a deleted trigger
    // does not lose its others.
    const missed = org === undefined ? misses.blockedFor(request.ip) : 0;
    if (missed > 0) throw throttled(missed, 'naming no trigger from this address');
    if (org !== undefined) {
      const wait = perOrg.blockedFor(org);
      if (wait > 0) throw throttled(wait, "to this organization's triggers");
    }
    const wait = perTrigger.take(id);
    if (wait > 0) throw throttled(wait, 'to this trigger');
  };

  app.post(
    '/hooks/:trigger_id',
    {
      config: { public: true },
      onRequest: refuseThrottled,
      schema: routeSchema({
        tags: ['Webhooks'],
        summary: 'Start an execution from a signed webhook',
        description:
          "No credential: the request is signed with the trigger's secret (headers `webhook-id`, `webhook-timestamp`, `webhook-signature`; docs/webhooks.md). The JSON body (at most `workflow.execution_input_bytes`) becomes the execution's `input_data`.",
        params,
        public: true,
        responses: {
          202: success(
            { execution_id: z.uuid() },
            'The execution was created (or, for a message already accepted, the one it created).',
          ),
        },
        errors: ['limit_exceeded', 'unauthorized', 'forbidden', 'not_found', 'conflict'],
      }),
    },
    async (request, reply) => {
      const { trigger_id: id } = request.params as { trigger_id: string };
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const message = readMessage(request.headers);
      if (message === 'missing') throw badSignature('webhook-id, webhook-timestamp and webhook-signature are required');
      if (message === 'malformed') throw badSignature('a signature header is malformed');
      if (message === 'outside_window')
        throw badSignature(`webhook-timestamp is more than ${REPLAY_WINDOW_SECONDS} s from now`);
      const target = isUuid(id) ? await triggerTarget(ctx.db, id) : undefined;
      if (target === undefined) {
        misses.take(request.ip);
        throw notFound();
      }
      orgOf.set(id, target.org_id);
      const orgWait = perOrg.take(target.org_id);
      if (orgWait > 0) throw throttled(orgWait, "to this organization's triggers");
      const secret = cipher.decrypt({ iv: target.iv, authTag: target.auth_tag, ciphertext: target.ciphertext }, id);
      if (!verifies(secret, message, body)) throw badSignature('the signature does not match');
      if (!(target.acting_owns || roleAtLeast(target.acting_role, 'write')))
        throw new ServiceError(
          'forbidden',
          "The account the trigger acts as can no longer write its session's blob; rotate the trigger's secret as one who can.",
        );
      const input = inputOf(body);
      const answer = await ctx.db.transaction(async (tx) => {
        const earlier = await claimReceipt(tx, id, message.id, REPLAY_WINDOW_SECONDS);
        if (earlier !== undefined) return { executionId: earlier, replayed: true };
        const created = await ctx.creates.createIn(tx, {
          revisionId: target.revision_id,
          orgId: target.org_id,
          blobId: target.blob_id,
          sessionRef: target.session_id,
          definitionRef: target.definition_id,
          ...input,
        });
        if ('refusal' in created) {
          if (created.refusal === 'limit') throw limitExceeded(created.limit, created.held);
          if (created.refusal === 'session_deleting')
            throw new ServiceError('conflict', 'The session is being deleted.');
          throw notFound();
        }
        await insertReceipt(tx, id, message.id, created.id);
        return { executionId: created.id, replayed: false };
      });
      if (answer.replayed) reply.header(REPLAYED_HEADER, 'true');
      return reply.code(202).send({ status: 'success', execution_id: answer.executionId });
    },
  );
}
