import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createCredentialCipher, type CredentialCipher } from '../../shared/crypto/credential-cipher.ts';
import type { Tx } from '../../shared/db/db.ts';
import { ServiceError } from '../../shared/errors.ts';
import type { Principal } from '../auth/principal.ts';
import type { BaseContext } from '../base-context.ts';
import { claimKey, findStoredKey, markInFlight, storeAnswer } from '../sql/idempotency-keys.ts';
import { purgeExpiredAnswers, secondsUntilOldestExpires, takeAnswerSlot } from '../sql/idempotency-usage.ts';
import { callerScope, checkedKey, fingerprint, IDEMPOTENCY_HEADER } from './idempotency-key.ts';
import { IDEMPOTENCY_KEY_SECONDS } from '../../shared/retention/idempotency-keys.ts';

/** What a creating operation answers: the HTTP status and the JSON body (REST) or result (JSON-RPC). */
export interface Answer {
  status: number;
  body: Record<string, unknown>;
}

/** An answer, and whether it is a stored one given back to a retry. */
export interface KeyedAnswer extends Answer {
  replayed: boolean;
}

/** A keyed request: its checked key, what it is (`POST /v1/orgs`, `create_execution`) and its input. */
export interface KeyedRequest {
  key: string;
  operation: string;
  /** The target and the parsed params: what must match for a retry to be "the same request". */
  input: unknown;
}

// The answers' cipher, made once per CREDENTIAL_KEY (one per process) rather than per request.
let sealing: { from: string; cipher: CredentialCipher } | undefined;
function cipherFor(credentialKey: string): CredentialCipher {
  if (sealing?.from !== credentialKey) sealing = { from: credentialKey, cipher: createCredentialCipher(credentialKey) };
  return sealing.cipher;
}

// A claim finds no live row only when the row it conflicted with expired between its two
// statements; a third miss in a row is not a race but a fault.
const CLAIM_ATTEMPTS = 3;

/** The refusal of a duplicate that arrives while the first request with its key still runs. */
function inProgress(): ServiceError {
  return new ServiceError(
    'conflict',
    'A request with this idempotency key is still in progress: retry it once that one has been answered.',
  );
}

/**
 * Counts a stored answer of `bytes` against the account, in the storing transaction: past
 * IDEMPOTENT_ANSWERS_PER_ACCOUNT or IDEMPOTENT_BYTES_PER_ACCOUNT (after removing its expired
 * answers) it is 429 `rate_limited`, and the create rolls back with it: the caller retries once
 * older answers have expired, or sends the request without a key.
 */
async function countAnswer(ctx: BaseContext, tx: Tx, account: string, bytes: number): Promise<void> {
  const { idempotentAnswersPerAccount: answers, idempotentBytesPerAccount: maxBytes } = ctx.config.storage;
  const bounds = {
    maxAnswers: answers === 0 ? Number.MAX_SAFE_INTEGER : answers,
    maxBytes: maxBytes === 0 ? Number.MAX_SAFE_INTEGER : maxBytes,
  };
  if (bytes <= bounds.maxBytes) {
    if (await takeAnswerSlot(tx, account, bytes, bounds)) return;
    if ((await purgeExpiredAnswers(tx, account, IDEMPOTENCY_KEY_SECONDS)) > 0) {
      if (await takeAnswerSlot(tx, account, bytes, bounds)) return;
    }
  }
  const wait = await secondsUntilOldestExpires(tx, account, IDEMPOTENCY_KEY_SECONDS);
  const refusal = new ServiceError(
    'rate_limited',
    `This account holds as many stored idempotent answers as the service keeps (${answers} answers, ${maxBytes} bytes, for 24 hours); retry in ${wait} s, or send the request without an idempotency key.`,
  );
  refusal.retryAfterSeconds = wait;
  throw refusal;
}

/**
 * Runs `create` once per caller and key. In one transaction: the key is marked in flight and
 * claimed first (a concurrent request with the same key is answered 409 `conflict` "in progress"
 * at once, rather than waiting with a pool connection for this one to finish), then
 * `create` runs on the same transaction and its answer is stored, sealed, before the commit. So
 * the key and what it created commit or roll back together: a refusal `create` throws stores
 * nothing, and a retry runs afresh.
 *
 * A key already holding a live answer (under 24 hours old) gives that answer back
 * (`replayed: true`) when the request is the same (same operation, target and parsed params),
 * and 409 `conflict` otherwise; `create` does not run.
 */
export async function runIdempotent(
  ctx: BaseContext,
  principal: Principal,
  request: KeyedRequest,
  create: (tx: Tx) => Promise<Answer>,
): Promise<KeyedAnswer> {
  const secret = ctx.config.secrets.CREDENTIAL_KEY;
  const caller = callerScope(principal);
  const print = fingerprint(secret, request.operation, request.input);
  const cipher = cipherFor(secret);
  // Binds a sealed answer to its key: a row copied onto another caller's key does not open.
  const aad = `idempotency-key\n${caller}\n${request.key}`;
  for (let attempt = 1; ; attempt += 1) {
    const answer = await ctx.db.transaction(async (tx): Promise<KeyedAnswer | undefined> => {
      const claim = {
        caller,
        key: request.key,
        operation: request.operation,
        fingerprint: print,
        ttlSeconds: IDEMPOTENCY_KEY_SECONDS,
        account: principal.userId,
      };
      if (!(await markInFlight(tx, caller, request.key))) throw inProgress();
      if (await claimKey(tx, claim)) {
        const created = await create(tx);
        const sealed = cipher.encrypt(JSON.stringify(created.body), aad);
        await countAnswer(ctx, tx, principal.userId, sealed.ciphertext.length);
        await storeAnswer(tx, caller, request.key, created.status, sealed);
        return { ...created, replayed: false };
      }
      const stored = await findStoredKey(tx, caller, request.key, IDEMPOTENCY_KEY_SECONDS);
      if (stored === undefined) return undefined;
      if (stored.fingerprint.length !== print.length || !timingSafeEqual(stored.fingerprint, print)) {
        const what =
          stored.operation === request.operation ? `${request.operation} with another body` : stored.operation;
        throw new ServiceError(
          'conflict',
          `This idempotency key was already used for ${what}: send a new key for a new request.`,
        );
      }
      return {
        status: stored.status,
        body: JSON.parse(cipher.decrypt(stored.sealed, aad)) as Record<string, unknown>,
        replayed: true,
      };
    });
    if (answer !== undefined) return answer;
    if (attempt === CLAIM_ATTEMPTS) throw new Error(`idempotency key claim missed ${CLAIM_ATTEMPTS} times`);
  }
}

/** The response header set on an answer given back to a retry. */
export const REPLAYED_HEADER = 'idempotent-replayed';

/**
 * A creating REST route's transaction: with an `Idempotency-Key` header, `create` runs through
 * runIdempotent and a retry gets the stored status and body (with `Idempotent-Replayed: true`);
 * without one, it is a plain transaction. `input` is the parsed path params and body; the route
 * (method and pattern) is added here. A malformed header is 400 `invalid_request_body`.
 */
export async function sendCreated(
  ctx: BaseContext,
  request: FastifyRequest,
  reply: FastifyReply,
  input: unknown,
  create: (tx: Tx) => Promise<Answer>,
): Promise<FastifyReply> {
  const header = request.headers[IDEMPOTENCY_HEADER];
  if (header === undefined) {
    const answer = await ctx.db.transaction(create);
    return reply.code(answer.status).send(answer.body);
  }
  const key = checkedKey({ value: header, source: 'header' });
  const operation = `${request.method} ${request.routeOptions.url ?? request.url}`;
  const answer = await runIdempotent(ctx, request.principal, { key, operation, input }, create);
  if (answer.replayed) reply.header(REPLAYED_HEADER, 'true');
  return reply.code(answer.status).send(answer.body);
}
